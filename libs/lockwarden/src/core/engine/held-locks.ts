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
import type { Waiter } from '../wake/waiter';
import { releasePermits } from '../semaphore/permit-release';
import { MIN_LEASE_MS } from '../options/validate';
import { LeaseCalls } from './lease-calls';

/** The rest of locked work after its function settled (a response still streaming), or a function asked for it then. */
export type Until = PromiseLike<unknown> | (() => PromiseLike<unknown> | undefined);

/**
 * The locks one engine holds, and the work running under them: the orchestrator, in the
 * sense of nestjs/schedule. It owns every lease from grant to release, runs locked work
 * (`runLocked`), drains at shutdown, and leaves to their lease the locks whose work outlives
 * the grace. It never releases a lock while the work holding it runs.
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
    private readonly handOffTarget: ((channel: string) => Waiter | undefined) | undefined,
    /** The channels a waiter of this process waits on (WakeBus.waitedOn). */
    private readonly waitedOn: ReadonlySet<string>,
  ) {
    this.calls = new LeaseCalls(store, watchdog, emit, (lease) => this.forget(lease));
  }

  get size(): number {
    return this.leases.size;
  }

  /** Takes charge of a newly granted lease: watched by the watchdog until it ends. */
  add(lease: Lease): void {
    this.leases.add(lease);
    this.watchdog.track(lease);
    // A hand-off's short lease: its renewal goes out now, before the holder's work can hold
    // up the event loop past it.
    if (lease.currentLeaseMs < lease.leaseMs) this.watchdog.renewNow(lease);
  }

  /**
   * The one way locked work runs, for withLock, decorated methods and routes alike.
   *
   * `fn` runs as the holder of every handle (outermost first, so nested acquires
   * re-enter them). The handles are released once `fn` has settled **and**
   * `until` has settled (the rest of the work: a response still streaming, an
   * Observable still emitting), never before, whatever aborts their signals
   * meanwhile. `until` may be a function, asked once `fn` has settled.
   *
   * Without a rest of the work, the promise settles after the release; with
   * one, as soon as `fn` settles. It rejects with `fn`'s error, or with the
   * LockLostError of a lock lost while it ran.
   */
  runLocked<T>(handles: readonly LeaseHandle[], fn: () => T | Promise<T>, until?: Until): Promise<T> {
    const settled = this.inFrames(handles, fn);
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

  /**
   * Runs `fn` as the holder of `handles` and lets a shutdown wait for it, but releases
   * nothing: the caller owns the release. What `hold` builds on.
   */
  run<T>(handles: readonly LeaseHandle[], fn: () => T | Promise<T>): Promise<T> {
    return this.track(this.inFrames(handles, fn));
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

  /** Asks the holders of these handles to stop, without releasing anything. */
  interrupt(handles: Iterable<LockHandle>, reason: string): void {
    for (const h of handles) {
      // A handle this engine did not make has no lease here to interrupt.
      if (h instanceof LeaseHandle) h.lease.interrupt(new LockInterruptedError(h.lease.key, reason));
    }
  }

  /** Releases in reverse order; failures are logged, never thrown (the leases then expire). */
  async releaseAll(handles: readonly LockHandle[]): Promise<void> {
    if (handles.length === 1) return this.releaseQuietly(handles[0]);
    for (let i = handles.length - 1; i >= 0; i--) await this.releaseQuietly(handles[i]);
  }

  /**
   * Aborts the signal of every held lock, then waits up to `graceMs` until no locked work
   * runs and no lock is held. Nothing is released here: work releases its own locks.
   */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    for (const lease of this.leases) {
      lease.interrupt(new LockInterruptedError(lease.key, 'the application is shutting down'));
    }
    if (this.isIdle()) return;
    if (this.leases.size > 0) {
      // Said now, not only if the grace runs out: a test runner's hook timeout may come first.
      const keys = [...this.leases].map((l) => `"${l.key}"`).join(', ');
      const message =
        `Shutting down: waiting up to ${graceMs} ms (shutdownGraceMs) for the work holding ${this.leases.size} ` +
        `lock(s) (${keys}) to end; their signals are aborted.`;
      if (this.logger.log) this.logger.log(message);
      else this.logger.debug(message);
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => this.idleWaiters.push(resolve)),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
      }),
    ]);
    clearTimeout(timer);
  }

  /**
   * Stops for good: locks still held (their work outlived the grace) are not released,
   * since that work may still act on them. They stop being renewed, their holders are told
   * they are lost, and they expire with their lease, as after a crash. One warning names them.
   */
  abandon(): void {
    this.stopped = true;
    const abandoned = [...this.leases];
    this.leases.clear();
    const reason = 'the lock service shut down while the work holding it still ran; it expires with its lease';
    for (const lease of abandoned) {
      this.watchdog.untrack(lease);
      this.watchdog.lost(lease, reason, false); // one warning below names them all
    }
    if (abandoned.length === 0) return;
    const keys = abandoned.map((l) => `"${l.key}"`).join(', ');
    this.logger.warn(
      `Shut down with ${abandoned.length} lock(s) still held by running work (${keys}). They were not released, ` +
        'because that work may still act on them: they expire with their lease, as after a crash.',
    );
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

  /**
   * A release that failed during shutdown is said once, here, whoever called it: most often a
   * client shared with another module was closed before the lock service drained.
   */
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
    const lock = lease.lock;
    if (lock.kind === 'mutex') {
      const waited = lease.contended || this.waitedOn.has(lock.keys.channel);
      return this.store.releaseHeld(lock.keys, lease.ownerToken, waited, lease.mintedToken);
    }
    if (lock.kind === 'permit') return releasePermits(this.store, lease, lock.keys, this.handOffTarget);
    return this.store.rwRelease(lock.keys, lease.ownerToken, lock.kind);
  }

  private forget(lease: Lease): void {
    this.leases.delete(lease);
    this.watchdog.untrack(lease);
    this.checkIdle();
  }

  private async releaseQuietly(handle: LockHandle): Promise<void> {
    try {
      await handle.release();
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
