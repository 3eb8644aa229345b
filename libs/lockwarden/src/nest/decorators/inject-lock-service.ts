import { Inject } from '@nestjs/common';
import { LOCK_SERVICE_FOR_DECORATORS, LOCK_SERVICE_PROPERTY } from './locked.constants';

/**
 * Asks Nest to inject `LockService` into a decorated class's instances, once per class
 * whatever mix of `@Locked`, `@Semaphore`, `@LeaderOnly` and the others it carries: every
 * decorator finds it under the one property and the one token.
 */
export function injectLockService(prototype: object): void {
  const marker = Symbol.for('lockwarden:injected');
  if (Object.prototype.hasOwnProperty.call(prototype, marker)) return;
  Object.defineProperty(prototype, marker, { value: true });
  Inject(LOCK_SERVICE_FOR_DECORATORS)(prototype, LOCK_SERVICE_PROPERTY);
}

/** The LockService Nest injected into a decorated instance, if it did. */
export function lockServiceOf<S>(self: unknown): S | undefined {
  return (self as Record<symbol, S | undefined> | undefined)?.[LOCK_SERVICE_PROPERTY];
}
