import type { LockKind, AcquireOptions, LockSpec, OnBusy } from '../core';
import type { KeyResolver, KeySpec } from './decorators/key-template';

// What a lock decorator records on a method, and the one place it is read: the decorators
// write it, the interceptor and the explorer read it. It sits between them so that neither
// `decorators/` nor `interceptors/` imports the other.

/** Metadata key under which a decorated method's lock settings are stored (with SetMetadata). */
export const LOCKED_METADATA = 'lockwarden:locked';

/** Everything a lock decorator recorded about one method. */
export interface LockedMetadata {
  readonly kind: LockKind;
  readonly spec: KeySpec;
  readonly keys: KeyResolver;
  readonly options: AcquireOptions;
  /** What each call asks of the engine for every key: `kind` and `options`, with a semaphore's limit. */
  readonly lockSpec: LockSpec;
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
