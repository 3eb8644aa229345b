import { LockBackendError } from '../../errors';
import { quoteKey } from '../../errors/key-text';
import { redisReason } from '../../errors/redis-reason';
import type { LockLogger } from '../observe/logger';
import type { Attempt } from './attempts';

// What the wait loop does once Redis has said "busy", and when it gives up: an uncontended
// acquire runs none of it.

/** What an await bounded by the wait budget gives when the budget ran out first. */
export const LATE: unique symbol = Symbol('late');
/** What a retry after a "busy" answer gives when Redis answered it with an error. */
export const FAILED: unique symbol = Symbol('failed');
/** The pause after `failures` failed retries in a row: 50 ms, doubled with each, up to 1 s. */
export function retryPauseMs(failures: number): number {
  return Math.min(50 * 2 ** (failures - 1), 1_000);
}

/**
 * One attempt after a "busy" answer (its failure already in the library's words): its reply,
 * LATE when the budget ran out first, or FAILED when Redis answered with an error (said at
 * debug: the wait goes on).
 */
export async function retry(
  ctx: { readonly logger: LockLogger },
  gate: { orLate<T>(work: Promise<T>, timeoutMs: number): Promise<T | typeof LATE> },
  key: string,
  work: Promise<number>,
  budgetMs: number,
): Promise<number | typeof LATE | typeof FAILED> {
  try {
    return await gate.orLate(work, budgetMs);
  } catch (err) {
    if (!(err instanceof LockBackendError)) throw err;
    ctx.logger.debug(
      `A retry for ${quoteKey(key)}, busy at the last answer, failed (${redisReason(err.cause)}); waiting on.`,
    );
    return FAILED;
  }
}

/**
 * True once the waiter's channel is subscribed; false when the subscribe failed. The lock is
 * known to be busy, so a failed subscribe fails nothing: the waiter checks back by the lease.
 */
export async function subscribed(
  ctx: { readonly logger: LockLogger },
  key: string,
  join: Promise<unknown>,
): Promise<boolean> {
  try {
    await join;
    return true;
  } catch (err) {
    ctx.logger.debug(
      `Waiting for ${quoteKey(key)} without release messages (the subscribe failed: ${redisReason(err)}); ` +
        `it checks back when the holder's lease would end.`,
    );
    return false;
  }
}

/**
 * Whether an acquire that gave up left nothing on the server: a mutex attempt, not queued and
 * never handed the lock, whose latest try was answered "busy". Its withdrawal would be a round
 * trip that finds nothing (every failed tryAcquire sent one). Read/write and permit attempts
 * always withdraw: a waiting writer keeps a place, and a release may have passed permits to
 * a parked waiter's token.
 */
export function nothingLeft(attempt: Attempt, queued: boolean, handedOff: boolean, lastBusy: boolean): boolean {
  return attempt.kind === 'mutex' && !queued && !handedOff && lastBusy;
}
