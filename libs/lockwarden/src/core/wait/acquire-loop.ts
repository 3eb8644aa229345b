import { LockBackendError, LockError } from '../../errors';
import { quoteKey } from '../../errors/key-text';
import { redisReason } from '../../errors/redis-reason';
import { AcquireGate } from './acquire-gate';
import type { LockEvent } from '../observe/events';
import type { LockLogger } from '../observe/logger';
import { newWaiterId } from '../backend/tokens';
import type { PermitHandOff } from '../backend/lock-store';
import type { WakeBus } from '../backend/wake-bus';
import { Waiter } from '../wake/waiter';

/** One kind of lock attempt, as the wait loop needs it. */
export interface AttemptSpec {
  readonly key: string;
  readonly channel: string;
  /** Grants arrive by waiter id (fair mutex) instead of as wake-ups. */
  readonly fair: boolean;
  /** How often a waiter that always holds a place on the server (a waiting writer) checks back. */
  readonly refreshMs: number | undefined;
  /** How often a waiter checks back once it is queued (fair or starving), so its place does not lapse. */
  readonly queueRefreshMs: number | undefined;
  /** The longest a release hands a queued waiter the lock for before it confirms (Infinity: no hand-off). */
  readonly handoffMs: number;
  /**
   * Non-fair waiters that have waited this long join the server's FIFO queue,
   * so the next release hands them the lock (Go's mutex "starvation mode"):
   * barging stays cheap, while no waiter starves behind luckier processes.
   */
  readonly starvationMs: number | undefined;
  /**
   * One attempt, queued (fair) or not: the fencing token (>= 0) when granted, else -(ms worth
   * waiting). `waited`: an earlier attempt found the lock busy.
   */
  attempt(queued: boolean, waiterId: string, waited: boolean): Promise<number>;
  /** Undoes a server-side place, or a grant that landed as the caller gave up. */
  withdraw(): Promise<unknown>;
  /** Semaphores: lets a release of this process pass its permits to this waiter. */
  readonly handOff?: PermitHandOff;
}

export interface LoopContext {
  readonly bus: WakeBus;
  readonly gates: Set<AcquireGate>;
  /** Aborted, with the reason, once the engine shuts down. */
  readonly stopping: AbortSignal;
  readonly commandTimeoutMs: number;
  /** How long after its wait budget an acquire settles at the latest: SETTLE_GRACE_MS, plus what an attempt may take by design. */
  readonly settleGraceMs: number;
  readonly emit: ((event: LockEvent) => void) | undefined;
  readonly logger: LockLogger;
  /** Why Redis cannot be reached right now, when that is known. */
  readonly connectionDown?: () => Error | undefined;
}

/** An acquire settles this long after its wait budget at the latest, whatever Redis does. */
export const SETTLE_GRACE_MS = 250;

export type LoopResult =
  | {
      readonly granted: true;
      readonly fencingToken: number;
      readonly leaseFrom: number;
      /** How many releases passed the permits on in a row to get here (sem-release.lua). */
      readonly handOffs?: number;
      /** A release handed this waiter the lock (fair queue) or passed it its permits. */
      readonly handedOff?: boolean;
    }
  | { readonly granted: false; readonly busyMs: number };

/**
 * Waits for one lock. A single round trip when it is free. When it is busy:
 * subscribe to its channel, try again (so a release in between is not missed),
 * then sleep until a release message, a grant, or the holder's remaining lease,
 * whichever comes first, all within the wait budget. On any way out without
 * the lock, it withdraws whatever it left on the server.
 *
 * It settles by `waitMs` + SETTLE_GRACE_MS whatever Redis does (plus, in quorum mode or
 * with replicaAck, the time an attempt takes by design): a call still unanswered
 * then fails the acquire with LockBackendError, and the withdrawal goes on in the
 * background until Redis answers (or a grant it might have made, `leaseMs` long, is over),
 * so a grant that lands late is not left held.
 */
export async function acquireLoop(
  ctx: LoopContext,
  spec: AttemptSpec,
  waitMs: number,
  signal: AbortSignal | undefined,
  leaseMs: number,
): Promise<LoopResult> {
  const started = performance.now();
  const deadline = started + waitMs;
  const settleBy = deadline + ctx.settleGraceMs;
  let queued = spec.fair;
  let waiterId = queued ? newWaiterId() : '';
  const gate = new AcquireGate(spec.key, signal);
  if (ctx.stopping.aborted) gate.abort(ctx.stopping.reason);
  ctx.gates.add(gate);
  let waiter: Waiter | undefined;
  let sent = false;
  let parked = false;
  let granted = false;
  let handedOff = false;
  try {
    if (spec.handOff) {
      // Semaphores, where a new caller usually finds every permit taken: on a channel already
      // subscribed, wait for messages from before the first attempt, so that a failed attempt
      // parks at once instead of trying a second time to cover a release in between.
      const early = new Waiter(spec.channel, false, '');
      early.handOff = spec.handOff;
      if (ctx.bus.joinIfLive(early)) waiter = early;
    }
    for (;;) {
      gate.check();
      const sentAt = performance.now();
      sent = true;
      if (!queued && spec.starvationMs !== undefined && sentAt - started >= spec.starvationMs && waiter) {
        queued = true;
        waiter.fair = true;
        waiter.waiterId = waiterId = newWaiterId();
      }
      const reply = await ask(
        ctx,
        gate,
        spec.key,
        'acquire',
        spec.attempt(queued, waiterId, waiter !== undefined),
        settleBy - sentAt,
      );
      if (reply >= 0) {
        granted = true;
        return handedOff
          ? { granted: true, fencingToken: reply, leaseFrom: sentAt, handedOff }
          : { granted: true, fencingToken: reply, leaseFrom: sentAt };
      }
      const now = performance.now();
      if (now >= deadline) return { granted: false, busyMs: -reply };
      if (!waiter) {
        waiter = new Waiter(spec.channel, queued, waiterId);
        waiter.handoffMs = spec.handoffMs;
        waiter.handOff = spec.handOff;
        await ask(ctx, gate, spec.key, 'subscribe to', ctx.bus.join(waiter), settleBy - now);
        continue;
      }
      const refresh = (queued ? spec.queueRefreshMs : spec.refreshMs) ?? Infinity;
      const cap = Math.min(-reply, deadline - now, refresh);
      if (!parked) {
        parked = true;
        ctx.emit?.({ type: 'waiting', key: spec.key });
      }
      gate.whenAborted(() => waiter?.interrupt());
      const woke = await waiter.park(cap);
      gate.whenAborted(undefined);
      if (woke === 'pass') {
        // Granted in a release of this process, timed from when that release was sent.
        granted = true;
        return { granted: true, ...waiter.handOffGrant!, handedOff: true };
      }
      if (woke === 'grant') {
        // A release handed us the lock, but the message proves nothing about when: it may
        // have sat in a paused process past the short hand-off lease, and the lock may be
        // someone else's by now. Confirm it: the next attempt finds the lock ours, starts the
        // full lease, and times it from when that attempt was sent.
        waiter.handedOver = false;
        handedOff = true;
      }
    }
  } finally {
    ctx.gates.delete(gate);
    gate.dispose();
    if (waiter) ctx.bus.leave(waiter, granted);
    if (!granted && sent) await withdraw(ctx, spec, settleBy, performance.now() + leaseMs + ctx.commandTimeoutMs);
  }
}

/** Awaits one Redis call within the budget, as a typed error on failure. */
async function ask<T>(
  ctx: LoopContext,
  gate: AcquireGate,
  key: string,
  action: string,
  work: Promise<T>,
  budgetMs: number,
): Promise<T> {
  try {
    return await gate.race(work, Math.max(budgetMs, 0), action, ctx.connectionDown);
  } catch (err) {
    throw err instanceof LockError ? err : new LockBackendError(key, action, err);
  }
}

/**
 * Withdraws an attempt, waiting for it until `settleBy` at most; after that it goes on in
 * the background, tried again while Redis fails, until it is done or `giveUpAt` (when what
 * it would withdraw has lapsed anyway). A withdrawal is sent on the attempt's connection
 * after it, so Redis runs it after the attempt however late either gets there.
 */
export async function withdraw(
  ctx: LoopContext,
  spec: Pick<AttemptSpec, 'key' | 'withdraw'>,
  settleBy: number,
  giveUpAt: number,
): Promise<void> {
  const done = withdrawUntilAnswered(ctx, spec, giveUpAt);
  const wait = settleBy - performance.now();
  if (wait <= 0) return;
  let timer: NodeJS.Timeout | undefined;
  // Node fires a longer delay at once (a budget this long is a wait without end).
  const ms = Math.min(wait, 2 ** 31 - 1);
  await Promise.race([done, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

async function withdrawUntilAnswered(
  ctx: LoopContext,
  spec: Pick<AttemptSpec, 'key' | 'withdraw'>,
  giveUpAt: number,
): Promise<void> {
  for (let pause = 100; ; pause = Math.min(pause * 2, 2_000)) {
    try {
      await spec.withdraw();
      return;
    } catch (err) {
      if (ctx.stopping.aborted || performance.now() + pause >= giveUpAt) {
        // Said of an acquire that got nothing: it is no lock to give back, only an attempt that
        // may have reached Redis (a queued place, or a grant whose answer was lost).
        ctx.logger.debug(
          `An acquire of ${quoteKey(spec.key)} that did not get the lock could not be cleaned up after ` +
            `(${redisReason(err)}); whatever it may have left in Redis expires by itself.`,
        );
        return;
      }
      await new Promise<void>((resolve) => setTimeout(resolve, pause).unref());
    }
  }
}
