import { LockBackendError, LockInterruptedError, LockLostError } from '../../errors';
import { Lease, LeaseHandle } from '../lease/lease';
import { CallBudget } from './call-budget';
import { lockSignal, withArg } from './lock-signal';
import type { LeaseHost } from '../lease/lease';
import type { LockContext } from './lease-granter';
import type { LockHandle } from '../lease/lock-handle';
import type { Watchdog } from '../lease/watchdog';
import type { LockEvent } from '../observe/events';
import type { LockLogger } from '../observe/logger';
import type { LockStore } from '../backend/lock-store';
import type { BusWaiter } from '../backend/wake-bus';
import { mintOnFirstRead, releaseMutex } from '../mutex/mutex-lease';
import type { HandOffHere } from '../mutex/mutex-lease';
import { releasePermits } from '../semaphore/permit-release';
import { MIN_LEASE_MS } from '../options/validate';
import { LeaseCalls } from './lease-calls';
import { lostAtRelease, reportLostAfterWork, warnNotReleased, warnUnreleased } from './lease-ends';
import type { MethodCall, Until } from './method-call';

/**
 * The locks one engine holds and the work under them (the orchestrator, as in nestjs/schedule):
 * every lease from grant to release, and locked work (`runLocked`). It never releases a lock
 * while the work holding it runs; one whose work outlives the shutdown grace expires instead.
 */
export class HeldLocks implements LeaseHost {
  private readonly leases = new Set<Lease>();
  private readonly running = new Set<Promise<unknown>>();
  private readonly idleWaiters: (() => void)[] = [];
  /** Set once the connections are closing: a late release then has nothing to talk to. */
  private stopped = false;
  /** Shutdown began: a release that fails now is warned of (warnUnreleased). */
  private draining = false;
  /** A holder's own calls on its lease: extending it. */
  private readonly calls: LeaseCalls;
  /** Bounds a holder's call (a release, a token read, an extension) by its budget. */
  private readonly budget: CallBudget;

  constructor(
    private readonly store: LockStore,
    private readonly watchdog: Watchdog,
    private readonly context: LockContext,
    private readonly logger: LockLogger,
    private readonly emit: ((event: LockEvent) => void) | undefined,
    /** Claims a parked semaphore waiter of this process to hand released permits off to (WakeBus.claimHandOffTarget). */
    private readonly handOffTarget: ((channel: string) => BusWaiter | undefined) | undefined,
    /** The channels a waiter of this process waits on (WakeBus.waitedOn). */
    private readonly waitedOn: ReadonlySet<string>,
    /** Where mutexes are handed off within the process: the bus's record of the mutexes held here (WakeBus.hold). */
    private readonly here: HandOffHere | undefined,
    /** How long a holder's call (a release, a token read, an extension) may wait for Redis, and how to say it. */
    callBudget: { readonly ms: number; readonly said: string },
  ) {
    this.budget = new CallBudget(callBudget.ms, callBudget.said);
    this.calls = new LeaseCalls(store, watchdog, emit, (call) => this.budget.bound(call));
    // A lost lease is no longer held: not counted, not waited for at shutdown, not "abandoned".
    watchdog.onLost = (lease) => {
      this.endedHere(lease);
      if (this.leases.delete(lease)) this.checkIdle();
    };
  }

  get size(): number {
    return this.leases.size;
  }

  /** Looks at every held lease in Redis now (see Watchdog.check): those no longer ours are lost, for `reason`. */
  checkAll(reason: string): Promise<void> {
    return this.watchdog.check(this.leases, reason);
  }

  /** Takes charge of a newly granted lease: watched by the watchdog until it ends. */
  add(lease: Lease): void {
    this.leases.add(lease);
    if (this.here && lease.lock.kind === 'mutex') this.here.hold(lease.lock.keys.channel, lease.ownerToken);
    this.watchdog.track(lease);
    // A hand-off's short lease is renewed now, before the holder's work can block the loop past it.
    if (lease.currentLeaseMs < lease.leaseMs) this.watchdog.renewNow(lease);
  }

  /**
   * The one way locked work runs. `fn` runs as the holder of every handle (outermost first, so
   * nested acquires re-enter them). They are released once `fn` **and** `until` (the rest of the
   * work: a response still streaming; a function is asked once `fn` settled) have settled, never
   * before, whatever aborts their signals. Without a rest, the promise settles after the release;
   * with one, once `fn` settles. It rejects with `fn`'s error, or the LockLostError of a lock lost.
   */
  runLocked<T>(handles: readonly LeaseHandle[], fn: () => T | Promise<T>, until?: Until): Promise<T> {
    return this.settle(handles, this.inFrames(handles, fn), until);
  }

  /**
   * A decorated method's call (LockedCall), run as runLocked runs work: the engine calls the
   * method itself, and a result that runs when subscribed (an Observable) keeps the locks
   * until its work is over, as `call.lateWork` says.
   */
  runMethod(handles: readonly LeaseHandle[], call: MethodCall): Promise<unknown> {
    const args = call.signalArg === undefined ? call.args : withArg(call.args, call.signalArg, lockSignal(handles));
    const method = Reflect.apply.bind(undefined, call.method, call.self, args) as () => unknown;
    const lateWork = call.lateWork;
    if (!lateWork) return this.settle(handles, this.inFrames(handles, method), call.until);
    let over: PromiseLike<unknown> | undefined;
    const settled = this.inFrames(handles, method).then((value) => {
      if (!isLate(value)) return value;
      const late = lateWork(value);
      over = late.over;
      return late.value;
    });
    return this.settle(handles, settled, () => over);
  }

  /** Releases `handles` once `settled` and `until` have; see runLocked. */
  private settle<T>(handles: readonly LeaseHandle[], settled: Promise<T>, until: Until | undefined): Promise<T> {
    // Boxed, so that awaiting `after` never waits for the rest of the work itself.
    const after = settled.then(noop, noop).then(() => ({ rest: typeof until === 'function' ? until() : until }));
    const released = this.track(
      after
        .then(({ rest }) => rest)
        .then(noop, noop)
        .then(() => this.releaseAll(handles)),
    );
    const outcome = (): Promise<T> =>
      settled.then((value) => {
        const lost = firstLoss(handles);
        if (lost) throw this.lostAfterWork(lost.lostError!, lost.name);
        return value;
      });
    if (until === undefined || typeof until === 'function') {
      return after.then(({ rest }) => (rest ? outcome() : released.then(outcome)));
    }
    // The rest is known up front (a route's response): the locks are released after the caller
    // has its answer, too late for the release to tell it. So they are looked at once now.
    return settled.then(
      () => this.watchdog.check(leasesOf(handles), AT_ANSWER).then(outcome),
      () => outcome(),
    );
  }

  /**
   * Locked work ran to its end, but its lock was lost meanwhile or found gone at its release:
   * its effects happened while another holder may have held the lock. Said at ERROR, counted
   * (an 'unprotected' event), and returned as the LockLostError its caller gets, which says so
   * (`workCompleted`), so that nobody is told to simply run it again.
   */
  lostAfterWork(lost: LockLostError, name?: string): LockLostError {
    return reportLostAfterWork(this.logger, this.emit, lost, name);
  }

  /** `fn` inside the reentrancy frames of `handles`, outermost first, as a promise. */
  private inFrames<T>(handles: readonly LeaseHandle[], fn: () => T | Promise<T>): Promise<T> {
    let run = fn;
    for (let i = handles.length - 1; i >= 0; i--) {
      const handle = handles[i];
      const inner = run;
      run = () => this.context.run(handle.lease, handle, inner);
    }
    try {
      return Promise.resolve(run());
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Releases in reverse order; failures are logged, never thrown (the leases then expire). */
  async releaseAll(handles: readonly LockHandle[]): Promise<void> {
    if (handles.length === 1) return this.releaseQuietly(handles[0]);
    for (let i = handles.length - 1; i >= 0; i--) await this.releaseQuietly(handles[i]);
  }

  /**
   * Shutdown began: aborts the signal of every held lock, and from now on a release that fails
   * is warned of. Returns the keys still held. Nothing is released here: work releases its own locks.
   */
  interruptAll(): string[] {
    this.draining = true;
    for (const lease of this.leases) {
      lease.interrupt(new LockInterruptedError(lease.key, 'the application is shutting down'));
    }
    return [...this.leases].map((l) => l.key);
  }

  /** Resolves once no locked work runs and no lock is held. */
  whenIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops for good: locks still held (their work outlived the grace) are not released, since
   * that work may still act on them. They stop being renewed, their holders are told they are
   * lost, and they expire with their lease, as after a crash. Returns their keys.
   */
  abandon(): string[] {
    this.stopped = true;
    const abandoned = [...this.leases];
    this.leases.clear();
    const reason = 'the lock service shut down while the work holding it still ran; it expires with its lease';
    for (const lease of abandoned) {
      this.endedHere(lease);
      this.watchdog.untrack(lease);
      this.watchdog.lost(lease, reason, false); // the shutdown's one warning names them all
    }
    return abandoned.map((l) => l.key);
  }

  // ---- LeaseHost: called by handles --------------------------------------------------------

  releaseLease(lease: Lease): Promise<boolean> {
    lease.handles--;
    if (lease.handles > 0) return Promise.resolve(lease.state === 'held');
    // A lease already lost was counted out when it was (its 'lost' event): its release is no second end.
    const held = lease.state === 'held';
    lease.state = 'released';
    lease.trace?.released();
    this.leases.delete(lease);
    this.watchdog.untrack(lease);
    this.checkIdle();
    if (this.stopped) {
      this.endedHere(lease);
      return Promise.resolve(false);
    }
    return this.budget.bound(this.releaseOnServer(lease)).then(
      (released) => {
        this.endedHere(lease);
        if (held && !released) lostAtRelease(lease, this.emit);
        else if (held) {
          this.emit?.({
            type: 'released',
            key: lease.key,
            name: lease.name,
            fencingToken: lease.mintedToken,
            heldMs: Math.round(performance.now() - lease.heldSince),
          });
        }
        return released;
      },
      (err: unknown) => {
        this.endedHere(lease);
        const error = new LockBackendError(lease.key, 'release', err);
        if (this.draining) warnUnreleased(this.logger, lease, error);
        throw error;
      },
    );
  }

  mintFence(lease: Lease): Promise<number> {
    const lock = lease.lock;
    // Only a plain mutex grant takes no token; every other kind's grant script mints one.
    if (lock.kind !== 'mutex') {
      return Promise.reject(new LockLostError(lease.key, 'its grant carried no fencing token'));
    }
    return mintOnFirstRead(this.store, this.watchdog, lease, lock.keys, (call) => this.budget.bound(call));
  }

  extendLease(lease: Lease, ms: number | undefined): Promise<void> {
    return this.calls.extend(lease, ms);
  }

  // ---- internals ----------------------------------------------------------------------------

  /** A mutex lease's hold here is over (WakeBus.unhold): its waiters in line may have to ask Redis now. */
  private endedHere(lease: Lease): void {
    if (this.here && lease.lock.kind === 'mutex') this.here.unhold(lease.lock.keys.channel, lease.ownerToken);
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.running.add(work);
    const done = (): void => {
      this.running.delete(work);
      this.checkIdle();
    };
    work.then(done, done);
    return work;
  }

  private isIdle(): boolean {
    return this.running.size === 0 && this.leases.size === 0;
  }

  private checkIdle(): void {
    if (this.idleWaiters.length === 0 || !this.isIdle()) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /** Deletes our lock, or, before its lockAtLeastMs is up, only shortens the lease to what remains of it. */
  private releaseOnServer(lease: Lease): Promise<boolean> {
    const keepMs = Math.ceil(lease.keepUntil - performance.now());
    if (keepMs >= MIN_LEASE_MS) {
      return this.store
        .renew([{ redisKey: lease.keys.lock, ownerToken: lease.ownerToken, leaseMs: keepMs, kind: lease.kind }])
        .then(([kept]) => kept);
    }
    const lock = lease.lock;
    if (lock.kind === 'mutex') return releaseMutex(this.store, lease, lock.keys, this.waitedOn, this.here);
    if (lock.kind === 'permit') return releasePermits(this.store, lease, lock.keys, this.handOffTarget);
    return this.store.rwRelease(lock.keys, lease.ownerToken, lock.kind);
  }

  private async releaseQuietly(handle: LockHandle): Promise<void> {
    try {
      // Not through the handle's release(), which would call back into releaseLease.
      if (handle instanceof LeaseHandle && handle.lease.host === this) {
        if (handle.markReleased()) await this.releaseLease(handle.lease);
      } else await handle.release();
    } catch (err) {
      warnNotReleased(this.logger, handle.key, err);
    }
  }
}

/** Why a lease looked at as its work answered (see settle) is lost. */
const AT_ANSWER = 'its key was gone from Redis when its work ended (evicted, deleted, flushed, or lost in a failover)';

function leasesOf(handles: readonly LeaseHandle[]): Lease[] {
  return handles.map((h) => h.lease);
}

/** The first of the handles' leases that was lost (not merely interrupted), if any. */
function firstLoss(handles: readonly LeaseHandle[]): Lease | undefined {
  for (const h of handles) if (h.lease.lostError) return h.lease;
  return undefined;
}

function noop(): void {}

/** A result whose work runs when it is subscribed: an Observable, or anything shaped like one. */
function isLate(value: unknown): boolean {
  return (
    typeof value === 'object' && value !== null && typeof (value as { subscribe?: unknown }).subscribe === 'function'
  );
}
