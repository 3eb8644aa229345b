import { newWaiterId, send, wrapped } from './attempts';
import type { Attempt } from './attempts';
import { withdraw } from './withdraw';
import type { LoopContext, LoopResult } from './loop-context';
import { AcquireGate } from './acquire-gate';
import { afterTurn } from './outage-sweep';
import type { Waiter } from '../wake/waiter';
import {
  FAILED,
  joinEarly,
  LATE,
  newWaiter,
  nothingLeft,
  parkFor,
  retry,
  retryPauseMs,
  subscribed,
  usableGrant,
  waitsInLine,
} from './busy-wait';

/**
 * The settle grace, and the settle rule it is part of. This is the rule's one statement: the
 * docs and the options' JSDoc link here. What Redis said is what the caller hears.
 * - Until an attempt is answered, the acquire settles by `waitMs` + this grace, whatever Redis
 *   does. With a quorum or replicaAck, add the time an attempt takes by design
 *   (`LockStore.attemptMs`). Before the engine's connection is first ready (or Redis first
 *   answers an attempt), the bound is `commandTimeoutMs` from the start, connecting included,
 *   plus that time by design, when that is later. An attempt still unanswered then fails the
 *   acquire with LockBackendError. One that fails sooner (a call the client dropped, a
 *   refusal) fails it then, with LockBackendError saying why. So a single try (`waitMs` 0) over
 *   a link whose round trip is longer than the grace always fails. At the bound, an answer that
 *   has already arrived is read first (AcquireGate): a stall of this process is not Redis' silence.
 * - Once an attempt has answered "busy", the acquire settles by `waitMs` itself, as busy
 *   (LockTimeoutError), whatever its subscription, its next attempt or its withdrawal is doing.
 *   A slow subscriber is no reason to call a held lock a failing Redis. A retry that fails
 *   (TRYAGAIN while a slot moves, a connection being made again) is tried again after a
 *   back-off.
 * - While Redis is known to be unreachable (the connection refused, closed, or lost and not
 *   back), an acquire fails with LockBackendError once that has lasted `commandTimeoutMs`, busy
 *   or not. One started after that fails at once (OutageSweep).
 *
 * A withdrawal not done by then goes on in the background, until Redis answers or a grant it
 * made would be over, so a grant that lands late is not left held. While Redis is unreachable,
 * the caller does not wait for the withdrawal at all.
 */
export const SETTLE_GRACE_MS = 250;

/**
 * Waits for one lock, by the settle rule above. A single round trip when it is free. When it is
 * busy, it subscribes (a mutex waiter to its engine's inbox for the lock) and tries again,
 * taking a place in the lock's queue, so a release in between is not missed. Then it sleeps
 * until a hand-off, a release message, a refresh of its place, or the end of the holder's
 * lease, within the wait budget. A hand-off it is told of is used at once while fresh
 * (usableGrant). Without the lock, it withdraws what it left.
 */
export async function acquireLoop(
  ctx: LoopContext,
  attempt: Attempt,
  waitMs: number,
  signal: AbortSignal | undefined,
  leaseMs: number,
): Promise<LoopResult> {
  // Shutting down, it fails as cancelled (below), whatever Redis does.
  const unreachable = ctx.stopping.aborted ? undefined : ctx.outages.failsNow(attempt.key, 'acquire');
  if (unreachable) return afterTurn(unreachable);
  const started = performance.now();
  const deadline = started + waitMs;
  // Before the engine first connects, Redis gets commandTimeoutMs to answer, as any command
  // does. Connecting can outlast a try's grace on a busy machine. It comes on top of what an
  // attempt takes by design (replicaAck's WAITs, a quorum's nodes).
  const cold = ctx.firstConnection?.pending === true;
  const byDesign = ctx.settleGraceMs - SETTLE_GRACE_MS;
  const settleBy = cold
    ? Math.max(deadline + ctx.settleGraceMs, started + ctx.commandTimeoutMs + byDesign)
    : deadline + ctx.settleGraceMs;
  // A single try (waitMs 0) takes no place: it would only have to withdraw it.
  let queued = attempt.fair || (attempt.queuesAtOnce && waitMs > 0);
  let waiterId = queued ? newWaiterId() : '';
  const gate = new AcquireGate(attempt.key, signal);
  if (ctx.stopping.aborted) gate.abort(ctx.stopping.reason);
  ctx.gates.add(gate);
  ctx.outages.watch(gate);
  let waiter: Waiter | undefined;
  let sent = false;
  let parked = false;
  let granted = false;
  let handedOff = false;
  /** An attempt has answered "busy": the wait budget, not the settle grace, bounds what follows. */
  let heardBusy = false;
  /** What the latest "busy" answer said the lock stays busy for. */
  let busyMs = 0;
  /** The latest attempt was answered "busy": nothing of it was left on the server, unless queued. */
  let lastBusy = false;
  /** Retries in a row that failed after a "busy" answer: their back-off grows with it. */
  let failures = 0;
  /** When each attempt was sent, by its number: a hand-off's lease counts from the one it names. */
  const sentTimes: number[] = [];
  /** Join this engine's line of waiters for the semaphore without a first attempt (see below). */
  let inLine = false;
  try {
    if (attempt.handOff ?? attempt.mutexHandOff) ({ waiter, inLine } = joinEarly(ctx, attempt, waitMs));
    for (;;) {
      gate.check();
      let cap: number;
      if (inLine) {
        // As if told "busy": its wait is bounded by its budget alone, and it withdraws on the
        // way out (a hand-off within the process may have named it as it gave up).
        inLine = false;
        sent = true;
        heardBusy = true;
        busyMs = attempt.queueRefreshMs ?? 0;
        // A mutex waiter in line is woken by what happens here (a hand-off here, or the end of the hold
        // that kept it in line), not by Redis: no check back every refresh, only the lease's.
        const checkBack = attempt.kind === 'mutex' ? attempt.ask.leaseMs : busyMs;
        cap = Math.min(checkBack, deadline - performance.now());
        // Out of budget, unless a hand-off came meanwhile (the park below takes it at once).
        if (cap <= 0 && !waiter?.handOffGrant) return { granted: false, busyMs };
      } else if (waiter && attempt.mutexHandOff && waitMs > 0 && waitsInLine(ctx, attempt, waiter)) {
        // Held here, or another waiter here has the engine's place: wait in line for it.
        inLine = true;
        continue;
      } else {
        const sentAt = performance.now();
        sent = true;
        lastBusy = false;
        // A mutex's first attempt barges in: only one that found the lock busy takes a place.
        const mayQueue = attempt.queues && (heardBusy || attempt.kind !== 'mutex');
        if (!queued && mayQueue && waiter && ctx.bus.mayTakePlace(waiter)) {
          // It found the lock busy and listens on its inbox: from now on it holds a place.
          queued = true;
          waiter.fair = true;
          waiter.waiterId = waiterId = newWaiterId();
        }
        const seq = sentTimes.push(sentAt) - 1;
        const work = send(ctx.store, attempt, queued, { waiterId, inbox: ctx.bus.inboxId, seq }, heardBusy);
        let reply: number | typeof LATE | typeof FAILED;
        if (!heardBusy) {
          // Bounded by what is left. Its "no answer" names the whole budget the caller gave Redis.
          const [bound, said] = [Math.max(settleBy - sentAt, 0), Math.round(settleBy - started)];
          reply = await gate.race(wrapped(attempt.key, 'acquire', work), bound, ctx.outages, cold, said);
        } else {
          // After a "busy", an attempt still unanswered at the deadline ends the wait as busy.
          reply = await retry(ctx, gate, attempt.key, wrapped(attempt.key, 'acquire', work), deadline - sentAt);
          if (reply === LATE) return { granted: false, busyMs };
        }
        if (reply === FAILED) {
          // The lock was busy at the last answer: a retry that fails (a slot being moved, a
          // connection being made again) ends nothing. Back off, and try again within the budget,
          // unless Redis was found unreachable meanwhile.
          gate.check();
          failures++;
          const now = performance.now();
          if (now >= deadline) return { granted: false, busyMs };
          cap = Math.min(retryPauseMs(failures), deadline - now);
        } else {
          failures = 0;
          // Answered, so connected: node-redis can answer what it queued before it says it is ready.
          if (ctx.firstConnection?.pending) ctx.firstConnection.pending = false;
          if (reply >= 0) {
            granted = true;
            if (handedOff) return { granted: true, fencingToken: reply, leaseFrom: sentAt, handedOff, contended: true };
            return heardBusy
              ? { granted: true, fencingToken: reply, leaseFrom: sentAt, contended: true }
              : { granted: true, fencingToken: reply, leaseFrom: sentAt };
          }
          busyMs = -reply;
          heardBusy = true;
          lastBusy = true;
          const now = performance.now();
          if (now >= deadline) return { granted: false, busyMs };
          if (!waiter) {
            waiter = newWaiter(ctx, attempt, queued, waiterId);
            // Within the budget and the holder's lease: a subscription that never lands costs at
            // most the lease, as a lost message does.
            const joined = await gate.orLate(
              subscribed(ctx, attempt.key, ctx.bus.join(waiter)),
              Math.min(deadline - now, busyMs),
            );
            if (joined === LATE && performance.now() >= deadline) return { granted: false, busyMs };
            // Subscribed, or the lease ran out first: try again, so a release before the
            // subscription is not missed. Not subscribed (the subscribe failed): wait below, by the lease.
            if (joined !== false) continue;
          }
          // A queued waiter checks back before its place lapses. Hand-offs to other engines'
          // waiters are not told to it, so it also learns this way of one that lapsed unused.
          const refresh = (queued || attempt.queues ? attempt.queueRefreshMs : attempt.refreshMs) ?? Infinity;
          cap = Math.min(busyMs, deadline - now, refresh);
        }
      }
      // A retry follows a "busy" answer (or joining the line), after which this process always has a waiter.
      if (!waiter) return { granted: false, busyMs };
      if (!parked) {
        parked = true;
        ctx.emit?.({ type: 'waiting', key: attempt.key, name: attempt.name });
      }
      const woke = await parkFor(gate, waiter, cap);
      if (woke === 'handOffHere') {
        // Granted in a release of this process, timed from when that release was sent.
        granted = true;
        return { granted: true, ...waiter.handOffGrant!, handedOff: true, contended: true };
      }
      if (woke === 'handOff') {
        waiter.toldOfHandOff = false;
        handedOff = true;
        const used = usableGrant(attempt, waiter, sentTimes);
        if (used) {
          granted = true;
          return { granted: true, ...used, handedOff: true, contended: true };
        }
        // Too late to trust (the message sat in a paused process, say: the lock may be someone
        // else's by now), or a fixed lease the watchdog will not extend: confirm it. The next
        // attempt finds the lock ours, starts the full lease, and times it from its sending.
      }
    }
  } finally {
    ctx.gates.delete(gate);
    ctx.outages.unwatch(gate);
    gate.dispose();
    if (waiter) ctx.bus.leave(waiter, granted);
    // A hand-off here that reached it as it gave up: its withdrawal releases the lock in Redis.
    if (!granted && attempt.mutexHandOff) ctx.bus.unhold(attempt.channel, attempt.ownerToken);
    if (!granted && sent && !nothingLeft(attempt, queued, handedOff, lastBusy)) {
      // After a "busy", the caller hears it by the deadline: the withdrawal goes on behind it.
      // One that cannot reach Redis goes on behind the caller at once.
      const waitFor = ctx.outages.current() ? -Infinity : heardBusy ? deadline : settleBy;
      await withdraw(ctx, attempt, waitFor, performance.now() + leaseMs + ctx.commandTimeoutMs);
    }
  }
}
