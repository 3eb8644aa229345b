import { LockConfigError } from '../errors';
import { describe } from '../core';

// The hint a busy caller gets of when to try again: a route's Retry-After, a microservice's or
// a WebSocket's `retryAfterMs`, a queue job's delay. The decorators set it per method and the
// module for the whole app; the interceptor sends it.

/**
 * The Retry-After a busy handler answers with when nothing more specific was set. The lease
 * the holder has left is no guide: a live holder renews it, so 300 ms of work would send a
 * client away for the whole lease.
 */
export const DEFAULT_RETRY_AFTER_MS = 1_000;

/** A Retry-After hint in ms: a whole number from 0 to one day. */
export function checkRetryAfter(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 86_400_000) {
    throw new LockConfigError(`${where}: retryAfterMs must be an integer from 0 to 86400000, got ${describe(value)}.`);
  }
  return value;
}
