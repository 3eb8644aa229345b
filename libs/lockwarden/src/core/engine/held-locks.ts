import { LockBackendError, LockInterruptedError, LockLostError } from '../../errors';
import { redisReason } from '../../errors/redis-reason';
import { Lease, LeaseHandle } from '../lease/lease';
import type { LeaseHost } from '../lease/lease';
import type { LockContext } from './lease-granter';
import type { LockHandle } from '../lease/lock-handle';
import type { Watchdog } from '../lease/watchdog';
import type { LockEvent } from '../observe/events';
import type { LockLogger } from '../observe/logger';
import type { LockStore } from '../backend/lock-store';
import type { BusWaiter } from '../backend/wake-bus';
import { releasePermits } from '../semaphore/permit-release';
import { MIN_LEASE_MS } from '../options/validate';
import { LeaseCalls } from './lease-calls';

/** The rest of locked work after its function settled (a response still streaming), or a function asked for it then. */
export type Until = PromiseLike<unknown> | (() => PromiseLike<unknown> | undefined);

/** A method the engine calls itself, holding locks: what runMethod runs (fields: see LockedCall). */
export interface MethodCall {
  readonly method: (...args: never[]) => unknown;
  readonly self: unknown;
  readonly args: readonly unknown[];
  readonly until?: PromiseLike<unknown>;
  readonly lateWork?: (value: unknown) => { readonly value: unknown; readonly over: PromiseLike<unknown> };
}

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
  /** A holder's own calls on its lease: reading its fencing token, extending it. */
  private readonly calls: LeaseCalls;

  constructor(
    private readonly store: LockStore,
    private readonly watchdog: Watchdog,
    private readonly context: LockContext,
    private readonly logger: LockLogger,
    private readonly emit: ((event: LockEvent) => void) | undefined,
    /** Claims a parked semaphore waiter of this process to pass released permits to (WakeBus.claimHandOffTarget). */
    private readonly handOffTarget: ((channel: string) => BusWaiter | undefined) | undefined,
    /** The channels a waiter of this process waits on (WakeBus.waitedOn). */
    private readonly waitedOn: ReadonlySet<string>,
  ) {
    this.calls = new LeaseCalls(store, watchdog, emit);
    // A lost lease is no longer held: not counted, not waited for at shutdown, not "abandoned".
    watchdog.onLost = (lease) => this.leases.delete(lease) && this.checkIdle();
  }

  get size(): number {
    return this.leases.size;
  }

  /** Takes charge of a newly granted lease: watched by the watchdog until it ends. */
  add(lease: Lease): void {
    this.leases.add(lease);
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
    const method = Reflect.apply.bind(undefined, call.method, call.self, call.args) as () => unknown;
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
        if (lost) throw lost;
        return value;
      });
    return after.then(({ rest }) => (rest ? outcome() : released.then(outcome)));
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
      this.watchdog.untrack(lease);
      this.watchdog.lost(lease, reason, false); // the shutdown's one warning names them all
    }
    return abandoned.map((l) => l.key);
  }

  // ---- LeaseHost: called by handles --------------------------------------------------------

  async releaseLease(lease: Lease): Promise<boolean> {
    lease.handles--;
    if (lease.handles > 0) return lease.state === 'held';
    lease.state = 'released';
    lease.trace?.released();
    this.forget(lease);
    if (this.stopped) return false;
    try {
      const released = await this.releaseOnServer(lease);
      this.emit?.({
        type: 'released',
        key: lease.key,
        name: lease.name,
        fencingToken: lease.mintedToken,
        heldMs: Math.round(performance.now() - lease.heldSince),
      });
      return released;
    } catch (err) {
      const error = new LockBackendError(lease.key, 'release', err);
      if (this.draining) this.warnUnreleased(lease, error);
      throw error;
    }
  }

  /** A release that failed in shutdown is said once, here (most often a shared client was closed first). */
  private warnUnreleased(lease: Lease, error: LockBackendError): void {
    const leftMs = Math.max(0, Math.round(lease.expiresAt - performance.now()));
    this.logger.warn(
      `Could not release lock "${lease.key}" while shutting down (${redisReason(error.cause)}): it stays held ` +
        `until its lease ends, in at most ${leftMs} ms. If its Redis client is shared with another module, ` +
        'that module closed it first: the client must outlive the lock service.',
    );
    REPORTED.add(error);
  }

  mintFence(lease: Lease): Promise<number> {
    return this.calls.mint(lease);
  }

  extendLease(lease: Lease, ms: number | undefined): Promise<void> {
    return this.calls.extend(lease, ms);
  }

  // ---- internals ----------------------------------------------------------------------------

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

  /**
   * Deletes our lock, or, before its lockAtLeastMs is up, only shortens the
   * lease to what remains of it, so the lock stays taken until then.
   */
  private async releaseOnServer(lease: Lease): Promise<boolean> {
    const keepMs = Math.ceil(lease.keepUntil - performance.now());
    if (keepMs >= MIN_LEASE_MS) {
      const [kept] = await this.store.renew([
        { redisKey: lease.keys.lock, ownerToken: lease.ownerToken, leaseMs: keepMs, kind: lease.kind },
      ]);
      return kept;
    }
    const { lock, ownerToken } = lease;
    if (lock.kind === 'permit') return releasePermits(this.store, lease, lock.keys, this.handOffTarget);
    if (lock.kind !== 'mutex') return this.store.rwRelease(lock.keys, ownerToken, lock.kind);
    const waited = lease.contended || this.waitedOn.has(lock.keys.channel);
    return this.store.releaseHeld({ keys: lock.keys, ownerToken, waited, fence: lease.mintedToken });
  }

  private forget(lease: Lease): void {
    this.leases.delete(lease);
    this.watchdog.untrack(lease);
    this.checkIdle();
  }

  private async releaseQuietly(handle: LockHandle): Promise<void> {
    try {
      // Not through the handle's release(), which would call back into releaseLease.
      if (handle instanceof LeaseHandle && handle.lease.host === this) {
        if (handle.markReleased()) await this.releaseLease(handle.lease);
      } else await handle.release();
    } catch (err) {
      if (err instanceof Error && REPORTED.has(err)) return;
      this.logger.warn(
        `Could not release lock "${handle.key}"; it will expire with its lease: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }
}

/** Release failures already logged (at shutdown): releaseAll does not log them again. */
const REPORTED = new WeakSet<Error>();

/** The first of the handles whose lease was lost (not merely interrupted), if any. */
function firstLoss(handles: readonly LeaseHandle[]): LockLostError | undefined {
  for (const h of handles) if (h.lease.lostError) return h.lease.lostError;
  return undefined;
}

function noop(): void {}

/** A result whose work runs when it is subscribed: an Observable, or anything shaped like one. */
function isLate(value: unknown): boolean {
  return (
    typeof value === 'object' && value !== null && typeof (value as { subscribe?: unknown }).subscribe === 'function'
  );
}
