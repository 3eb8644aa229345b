import { LockBackendError } from '../../errors';
import { quoteKey } from '../../errors/key-text';
import { redisReason, refusalOf } from '../../errors/redis-reason';
import { tellRefusal } from '../../errors/refusal-notice';
import type { LockLogger } from '../observe/logger';
import type { Attempt } from './attempts';
import { Waiter } from '../wake/waiter';
import type { LoopContext } from './loop-context';

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
 * debug: the wait goes on). A refusal (a command the ACL user may not run, OOM, a script's
 * error: redis-reason.ts) is thrown instead: every later try would get it too, and waiting it
 * out would have the caller hear "busy" when Redis said no.
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
    if (!(err instanceof LockBackendError) || refusalOf(err)) throw err;
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
    // A channel the ACL user may not subscribe to is said once; the wait still works, by the lease.
    tellRefusal(ctx.logger, err);
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
 * always withdraw: a waiting writer keeps a place, and a release may have handed permits off
 * to a parked waiter's token.
 */
export function nothingLeft(attempt: Attempt, queued: boolean, handedOff: boolean, lastBusy: boolean): boolean {
  return attempt.kind === 'mutex' && !queued && !handedOff && lastBusy;
}

/** The channel a waiter listens on: its engine's inbox for the lock when it queues, else the lock's own. */
export function listenOn(inboxId: string, attempt: Attempt): string {
  return attempt.queues ? `${attempt.channel}:${inboxId}` : attempt.channel;
}

/**
 * The lock a hand-off message gave, when it can be used as told: the server set the lock
 * to this waiter for `leaseMs` at the grant, and the attempt the message names was sent
 * before the grant (the server had seen it), so the lease counts from that attempt's sending
 * (a local moment no later than the grant). Used only while that leaves more than the
 * margin of so short a lease; undefined otherwise, and the waiter confirms with one call.
 */
export function usableGrant(
  attempt: Attempt,
  waiter: Waiter,
  sentTimes: readonly number[],
): { fencingToken: number; leaseFrom: number; grantedMs: number } | undefined {
  const notice = waiter.grantNotice;
  waiter.grantNotice = undefined;
  // A notice reaches only a waiter with a place, and every such grant can be used as told:
  // the watchdog extends its short lease at once (a fixed lease to the end it asked for).
  if (!notice) return undefined;
  const from = sentTimes[notice.seq];
  if (from === undefined || performance.now() >= from + notice.leaseMs - attempt.handoffMarginMs) return undefined;
  return { fencingToken: notice.fencingToken, leaseFrom: from, grantedMs: notice.leaseMs };
}

/**
 * Semaphores, where a new caller usually finds every permit taken, and mutexes handed off
 * within the process (`attempt.mutexHandOff`): on a channel already
 * subscribed, its waiter joins before the first attempt and hears messages from before it, so
 * that a failed attempt parks at once instead of trying a second time to cover a release in
 * between. `inLine`: where this engine waits for the semaphore already, with its place in the
 * queue taken (the server said "no room"), the new caller waits behind its waiters without an
 * attempt: releases here hand permits off to the oldest of them, and the engine's place goes
 * from one to the next; an attempt would find no room, or take the permits from under them.
 * Not a single try (waitMs 0): that asks the server.
 */
export function joinEarly(
  ctx: Pick<LoopContext, 'bus'>,
  attempt: Attempt,
  waitMs: number,
): { waiter: Waiter | undefined; inLine: boolean } {
  const channel = listenOn(ctx.bus.inboxId, attempt);
  // Nobody here waited for the lock lately: an uncontended acquire makes no waiter.
  if (!ctx.bus.isLive(channel)) return { waiter: undefined, inLine: false };
  const early = new Waiter(channel, false, '', attempt.channel);
  early.handOff = attempt.handOff;
  early.mutexHandOff = attempt.mutexHandOff;
  early.sharesPlace = attempt.queues;
  if (!ctx.bus.joinIfLive(early)) return { waiter: undefined, inLine: false };
  return { waiter: early, inLine: waitMs > 0 && waitsInLine(ctx, attempt, early) };
}

/**
 * Whether a waiter of this engine without a place in the queue waits in line, asking Redis
 * nothing: another waiter here holds the engine's place, or (mutexes) the lock is held here,
 * and its release hands it off within the process or wakes one in line to take the place.
 */
export function waitsInLine(ctx: Pick<LoopContext, 'bus'>, attempt: Attempt, waiter: Waiter): boolean {
  if (!attempt.queues || waiter.fair) return false;
  return ctx.bus.placeTaken(waiter) || (attempt.mutexHandOff !== undefined && ctx.bus.heldHere(attempt.channel));
}

/**
 * The waiter of an attempt Redis answered "busy". One that queues listens on its engine's
 * inbox for the lock: a hand-off is published there only, so no other process wakes for it.
 */
export function newWaiter(ctx: Pick<LoopContext, 'bus'>, attempt: Attempt, queued: boolean, waiterId: string): Waiter {
  const waiter = new Waiter(listenOn(ctx.bus.inboxId, attempt), queued, waiterId, attempt.channel);
  waiter.handoffMs = attempt.handoffMs;
  waiter.handOff = attempt.handOff;
  waiter.mutexHandOff = attempt.mutexHandOff;
  waiter.sharesPlace = (attempt.kind === 'permit' || attempt.mutexHandOff !== undefined) && attempt.queues;
  return waiter;
}

/** Parks `waiter` for `ms` at most, or until a signal fires (it then wakes to see the gate closed). */
export async function parkFor(
  gate: { whenAborted(fn: (() => void) | undefined): void },
  waiter: Waiter,
  ms: number,
): ReturnType<Waiter['park']> {
  gate.whenAborted(() => waiter.interrupt());
  const woke = await waiter.park(ms);
  gate.whenAborted(undefined);
  return woke;
}
