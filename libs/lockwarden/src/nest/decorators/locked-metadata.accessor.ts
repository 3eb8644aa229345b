import type { LockKind, AcquireOptions, LockRequest } from '../../core';
import type { KeyResolver, KeySpec } from './key-template';
import { LOCKED_METADATA } from './locked.constants';
import type { OnBusy } from '../../core/options/locked-options';

export type { LockKind };

/** Everything a lock decorator recorded about one method. */
export interface LockedMetadata {
  readonly kind: LockKind;
  readonly spec: KeySpec;
  readonly keys: KeyResolver;
  readonly options: AcquireOptions;
  /** What each call asks of the engine for every key: `kind` and `options`, with a semaphore's limit. */
  readonly request: LockRequest;
  readonly onBusy: OnBusy;
  /** The route's Retry-After hint when busy, in ms, if its decorator set one. */
  readonly retryAfterMs?: number;
  /** `Class.method()`, for messages. */
  readonly where: string;
  /** The index of the method's `@LockSignal()` parameter, if it has one. */
  readonly signalArg?: number;
}

/** The one place that reads lock metadata off a method (the wrapper the decorator installed). */
export function getLockedMetadata(method: unknown): LockedMetadata | undefined {
  if (typeof method !== 'function') return undefined;
  return Reflect.getMetadata(LOCKED_METADATA, method) as LockedMetadata | undefined;
}
