import { LockBackendError, LockLostError } from '../../errors';
import type { MutexKeys } from '../backend/lock-keys';
import { GIVEN_TO_QUEUE } from '../backend/lock-store';
import type { LockStore } from '../backend/lock-store';
import type { BusWaiter } from '../backend/wake-bus';
import type { Lease } from '../lease/lease';
import type { Watchdog } from '../lease/watchdog';

// What the held locks ask the store for a held mutex lease, beside the watchdog's renewals:
// its fencing token, minted on first read, and its release. The permits' twin is
// semaphore/permit-release.ts.

/**
 * The fencing token of a mutex lease granted without one (a plain `SET NX PX`), minted now
 * (fence-mint.lua) while the key is still ours. A lease whose key is no longer ours is lost,
 * as the watchdog would lose it.
 */
export async function mintOnFirstRead(
  store: LockStore,
  watchdog: Watchdog,
  lease: Lease,
  keys: MutexKeys,
  /** Bounds the call by commandTimeoutMs: a holder awaiting Redis through a partition is told, not kept. */
  inBudget: <T>(call: Promise<T>) => Promise<T>,
): Promise<number> {
  let token: number;
  try {
    token = await inBudget(store.mint(keys, lease.ownerToken));
  } catch (err) {
    throw new LockBackendError(lease.key, 'read the fencing token of', err);
  }
  lease.check();
  if (token > 0 && lease.state === 'held') {
    lease.mintedToken = token;
    lease.trace?.minted(token);
    return token;
  }
  if (token <= 0) {
    const reason = 'the key is no longer ours in Redis (it expired or was deleted)';
    watchdog.untrack(lease);
    watchdog.lost(lease, reason); // the held locks stop counting it (Watchdog.onLost)
  }
  throw lease.lostError ?? new LockLostError(lease.key, `it was ${lease.state} while its fencing token was read`);
}

/**
 * How many times in a row a mutex is handed off from holder to holder within one process (see
 * releaseMutex), and for how long at most, before a release gives it back to the queue, so
 * waiters in other processes get their turn. Longer runs within a process spread the cost of
 * a hand-off between processes (a message, a wake-up, and two scripts more) over more grants,
 * and make the other processes wait longer. Measured with 4 processes on one key (BENCHMARKS.md,
 * scenarios 4 and 13): 4 ms keeps the wait p99 of flows with think time where strict arrival
 * order had it; 10 ms doubles it, and 50 ms makes it five times longer.
 */
export const MAX_MUTEX_HANDOFFS = 16;
export const MAX_MUTEX_HANDOFFS_MS = 4;

/** What a release of this process needs to hand a mutex off within it. */
export interface HandOffHere {
  /** Claims a parked waiter of this process for the lock's channel (WakeBus.claimHandOffTarget). */
  readonly target: (channel: string) => BusWaiter | undefined;
  /** WakeBus.hold: the waiter handed the lock holds it here from now. */
  readonly hold: (lockChannel: string, ownerToken: string) => void;
  /** WakeBus.unhold: a lease's hold here is over. */
  readonly unhold: (lockChannel: string, ownerToken: string) => void;
}

/**
 * Releases a held mutex lease. When a waiter of this process is parked for the lock, the lock
 * goes straight to it (hand-off-here.lua): one call, no message, and no other process wakes;
 * waiters elsewhere keep their places. Once the lock has been handed off within the process
 * MAX_MUTEX_HANDOFFS times or for MAX_MUTEX_HANDOFFS_MS in a row, the same call gives it to
 * the queue instead if another place waits there, and the run starts again if none does.
 * Otherwise it tells the store whether someone may wait for the lock: this process's waiters
 * (`waitedOn`, the channels they wait on) or a busy answer on the way in (`Lease.contended`).
 * A store may then release a lock nobody waited for with fewer keys (HeldRelease).
 */
export async function releaseMutex(
  store: LockStore,
  lease: Lease,
  keys: MutexKeys,
  waitedOn: ReadonlySet<string>,
  here: HandOffHere | undefined,
): Promise<boolean> {
  // Only a lock a waiter of this process waits for can be handed off here.
  const to = here && lease.handsOffHere && waitedOn.has(keys.channel) ? here.target(keys.channel) : undefined;
  if (!to?.mutexHandOff) {
    const waited = lease.contended || waitedOn.has(keys.channel);
    return store.releaseHeld({ keys, ownerToken: lease.ownerToken, waited, fence: lease.mintedToken });
  }
  const sentAt = performance.now();
  const runOver = runIsOver(lease, sentAt);
  let fence: number;
  try {
    fence = await store.handOffMutex(keys, lease.ownerToken, to.mutexHandOff, to.fair, runOver);
  } catch (err) {
    // It tries by itself: a hand-off that did land is found by its attempt (acquire.lua's holder path).
    to.claimed = false;
    to.wake();
    throw err;
  }
  if (fence === GIVEN_TO_QUEUE) {
    // Another process's turn: the waiter stays in line, and takes its engine's place in the
    // queue once no lease here holds the lock (WakeBus.unhold).
    to.claimed = false;
    return true;
  }
  if (fence < 0) {
    // Not ours to hand off (its key expired or was deleted): the waiter asks Redis itself.
    to.claimed = false;
    to.wake();
    return false;
  }
  here!.hold(keys.channel, to.mutexHandOff.ownerToken);
  // Nobody else waited: a new run starts with this hand-off.
  if (runOver) to.takeHandOff(fence, sentAt, 1, sentAt);
  else to.takeHandOff(fence, sentAt, lease.handOffs + 1, lease.handOffsSince ?? sentAt);
  return true;
}

/** Whether `lease`'s process has kept the lock long enough (see MAX_MUTEX_HANDOFFS). */
function runIsOver(lease: Lease, now: number): boolean {
  if (lease.handOffs >= MAX_MUTEX_HANDOFFS) return true;
  return lease.handOffsSince !== undefined && now - lease.handOffsSince >= MAX_MUTEX_HANDOFFS_MS;
}
