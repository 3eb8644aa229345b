import { LockBackendError, LockConfigError, LockError, LockLostError, LockTimeoutError } from '../errors';
import { AcquireGate } from './acquire-gate';
import { resolveEngineOptions, safetyMarginFor } from './engine-options';
import type { LockEngineOptions, ResolvedEngineOptions } from './engine-options';
import { Lease, LeaseHandle } from './lease';
import type { LeaseOwner } from './lease';
import { emitter } from './events';
import type { LockEvent } from './events';
import { LockContext } from './lock-context';
import type { LockHandle } from './lock-handle';
import { mutexKeys } from './lock-keys';
import type { MutexKeys } from './lock-keys';
import type { LockLogger } from './logger';
import { RedisLockStore } from './mutex-store';
import type { LockStore } from './mutex-store';
import { checkInteger, MAX_MS, MIN_LEASE_MS, resolveAcquire } from './options';
import type { AcquireOptions, ResolvedAcquire } from './options';
import { closeClient, openClient } from './redis-client';
import type { ClientLease, RedisClient } from './redis-client';
import { RenewalScheduler } from './renewal-scheduler';
import { newOwnerToken, newWaiterId } from './tokens';
import { WakeBus, Waiter } from './wake-bus';

/** A fair waiter checks back this often, and keeps its place twice that long without doing so. */
const FAIR_REFRESH_MS = 2_000;
const FAIR_WAITER_TTL_MS = 3 * FAIR_REFRESH_MS;
const SHUTTING_DOWN = new Error('the lock service is shutting down');

/**
 * The framework-free lock engine behind `LockService`: reentrant, fenced
 * mutexes on Redis, woken by pub/sub, kept alive by one batched watchdog.
 *
 * @example
 * ```ts
 * const engine = new LockEngine({ redis: 'redis://127.0.0.1:6380' });
 * await engine.withLock('nightly-report', async (lock) => {
 *   await buildReport({ signal: lock.signal, fencingToken: lock.fencingToken });
 * });
 * await engine.close();
 * ```
 */
export class LockEngine implements LeaseOwner {
  readonly options: ResolvedEngineOptions;
  readonly client: RedisClient;
  private readonly connection: ClientLease;
  private readonly store: LockStore;
  private readonly bus: WakeBus;
  private readonly scheduler: RenewalScheduler;
  private readonly context = new LockContext();
  private readonly leases = new Set<Lease>();
  private readonly gates = new Set<AcquireGate>();
  private closing = false;
  private readonly emit: (event: LockEvent) => void;
  private closed: Promise<void> | undefined;

  constructor(options: LockEngineOptions, logger?: LockLogger) {
    this.options = resolveEngineOptions(options, logger);
    this.connection = openClient(this.options.redis);
    this.client = this.connection.client;
    if (this.connection.owned) {
      this.client.on('error', (err: Error) => this.options.logger.debug(`Redis connection error: ${err.message}`));
    }
    this.store = new RedisLockStore(this.client, this.options.instanceId);
    this.bus = new WakeBus(this.client);
    this.emit = emitter(this.options.onEvent);
    this.scheduler = new RenewalScheduler(this.store, this.options.logger, this.emit);
  }

  /** Locks held through this engine right now (each acquisition once, however many reentrant holds). */
  get heldCount(): number {
    return this.leases.size;
  }

  /** The watchdog, for health reporting. */
  get watchdog(): RenewalScheduler {
    return this.scheduler;
  }

  async acquire(key: string, options?: AcquireOptions): Promise<LockHandle> {
    const req = resolveAcquire(key, options, this.options);
    return this.reenter(req.key) ?? this.acquireOrThrow(req);
  }

  async tryAcquire(key: string, options?: AcquireOptions): Promise<LockHandle | null> {
    const req = resolveAcquire(key, options, this.options);
    const reentered = this.reenter(req.key);
    if (reentered) return reentered;
    const lease = await this.acquireNew({ ...req, waitMs: 0 });
    return typeof lease === 'number' ? null : new LeaseHandle(lease);
  }

  async withLock<T>(key: string, fn: (lock: LockHandle) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    if (typeof fn !== 'function') {
      throw new LockConfigError(`withLock needs a function to run under lock "${String(key)}".`);
    }
    const handle = await this.acquire(key, options);
    return this.runHolding(handle as LeaseHandle, fn);
  }

  /**
   * Runs `fn` as the holder of `handle`: nested acquires of the same key
   * re-enter it. Releases afterwards; a release error never hides `fn`'s own.
   */
  async runHolding<T>(handle: LeaseHandle, fn: (lock: LockHandle) => T | Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await this.context.run(handle.lease, handle, () => fn(handle));
    } catch (err) {
      await this.releaseQuietly(handle);
      throw err;
    }
    const lost = handle.signal.aborted ? (handle.signal.reason as unknown) : undefined;
    await this.releaseQuietly(handle);
    if (lost !== undefined) throw lost instanceof LockLostError ? lost : new LockLostError(handle.key, String(lost));
    return result;
  }

  /**
   * Takes several locks one at a time, in the order given (callers sort them,
   * so two calls never wait on each other crosswise). On any failure it
   * releases what it took. With `busy: 'skip'` a held key yields `null`; with
   * `'throw'` it fails at once with LockTimeoutError.
   */
  async acquireAll(
    keys: readonly string[],
    options: AcquireOptions,
    busy: 'wait' | 'throw' | 'skip',
  ): Promise<LeaseHandle[] | null> {
    const opts = busy === 'wait' ? options : { ...options, waitMs: 0 };
    const held: LeaseHandle[] = [];
    try {
      for (const key of keys) {
        const handle = busy === 'skip' ? await this.tryAcquire(key, opts) : await this.acquire(key, opts);
        if (!handle) {
          await this.releaseAll(held);
          this.emit({ type: 'skipped', key });
          return null;
        }
        held.push(handle as LeaseHandle);
      }
      return held;
    } catch (err) {
      await this.releaseAll(held);
      throw err;
    }
  }

  /** Runs `fn` as the holder of every handle (outermost first), so nested acquires re-enter them. */
  runInFrames<T>(handles: readonly LeaseHandle[], fn: () => T): T {
    let run = fn;
    for (let i = handles.length - 1; i >= 0; i--) {
      const handle = handles[i];
      const inner = run;
      run = () => this.context.run(handle.lease, handle, inner);
    }
    return run();
  }

  /** Releases in reverse order; failures are logged, never thrown (the leases then expire). */
  async releaseAll(handles: readonly LockHandle[]): Promise<void> {
    for (let i = handles.length - 1; i >= 0; i--) await this.releaseQuietly(handles[i]);
  }

  /** The innermost lock held by the calling async context (for `key`, when given). */
  current(key?: string): LockHandle | undefined {
    return this.context.current(key)?.handle;
  }

  /** Releases every lock, stops the watchdog and closes the connections this engine opened. */
  close(): Promise<void> {
    this.closed ??= this.shutdown();
    return this.closed;
  }

  // ---- LeaseOwner: called by handles -------------------------------------------------------

  async releaseLease(lease: Lease): Promise<boolean> {
    lease.holds--;
    if (lease.holds > 0) return lease.state === 'held';
    lease.state = 'released';
    this.forget(lease);
    try {
      const released = await this.store.release(lease.keys, lease.token);
      this.emit({ type: 'released', key: lease.key, fencingToken: lease.fencingToken });
      return released;
    } catch (err) {
      throw new LockBackendError(lease.key, 'release', err);
    }
  }

  async extendLease(lease: Lease, ms: number | undefined): Promise<void> {
    const leaseMs = ms === undefined ? lease.leaseMs : checkInteger('extend(ms)', ms, MIN_LEASE_MS, MAX_MS, lease.key);
    if (lease.state !== 'held') throw new LockLostError(lease.key, `it was already ${lease.state}`);
    const sentAt = performance.now();
    let renewed: boolean[];
    try {
      renewed = await this.store.renew([{ lockKey: lease.keys.lock, token: lease.token, leaseMs }]);
    } catch (err) {
      throw new LockBackendError(lease.key, 'extend', err);
    }
    if (lease.state !== 'held') throw new LockLostError(lease.key, `it was ${lease.state} while extending`);
    if (!renewed[0]) {
      const reason = 'the key is no longer ours in Redis (it expired or was deleted)';
      if (lease.lose(reason)) {
        this.forget(lease);
        this.emit({ type: 'lost', key: lease.key, fencingToken: lease.fencingToken, reason });
      }
      throw lease.signal.reason as LockLostError;
    }
    lease.confirm(sentAt, leaseMs);
    this.scheduler.reschedule(lease);
    this.emit({ type: 'extended', key: lease.key, fencingToken: lease.fencingToken });
  }

  // ---- acquisition ----------------------------------------------------------------------------

  private reenter(key: string): LeaseHandle | undefined {
    const frame = this.context.current(key);
    if (!frame) return undefined;
    if (frame.lease.state === 'lost') {
      throw new LockLostError(key, 'the enclosing hold of this key was already lost');
    }
    frame.lease.holds++;
    return new LeaseHandle(frame.lease);
  }

  private async acquireOrThrow(req: ResolvedAcquire): Promise<LockHandle> {
    const started = performance.now();
    const lease = await this.acquireNew(req);
    if (typeof lease === 'number') {
      const waitedMs = Math.round(performance.now() - started);
      this.emit({ type: 'timeout', key: req.key, waitedMs });
      throw new LockTimeoutError(req.key, waitedMs, lease);
    }
    return new LeaseHandle(lease);
  }

  /**
   * One acquisition: a single round trip when the lock is free. When it is
   * busy: subscribe to its channel, try again (so a release in between is not
   * missed), then sleep until a release message, a grant, or the lock's
   * remaining lease, whichever comes first, within the wait budget. Resolves
   * the lease, or, when the budget ran out, how long the lock is still held.
   */
  private async acquireNew(req: ResolvedAcquire): Promise<Lease | number> {
    const keys = mutexKeys(this.options.keyPrefix, req.key);
    const token = newOwnerToken();
    const waiterId = req.fair ? newWaiterId() : '';
    const started = performance.now();
    const deadline = started + req.waitMs;
    const gate = new AcquireGate(req.key, req.signal);
    if (this.closing) gate.abort(SHUTTING_DOWN);
    this.gates.add(gate);
    let waiter: Waiter | undefined;
    let sent = false;
    let parked = false;
    let lease: Lease | null = null;
    try {
      for (;;) {
        gate.check();
        const sentAt = performance.now();
        sent = true;
        const reply = await this.ask(
          gate,
          req.key,
          'acquire',
          this.store.acquire({
            keys,
            token,
            leaseMs: req.leaseMs,
            fair: req.fair,
            waiterId,
            waiterTtlMs: FAIR_WAITER_TTL_MS,
          }),
          deadline - sentAt,
        );
        if (reply > 0) return (lease = this.grant(req, keys, token, reply, sentAt, started));
        const now = performance.now();
        if (now >= deadline) return -reply;
        if (!waiter) {
          waiter = new Waiter(keys.channel, req.fair, waiterId);
          await this.ask(gate, req.key, 'subscribe to', this.bus.join(waiter), deadline - now);
          continue;
        }
        const cap = Math.min(-reply, deadline - now, req.fair ? FAIR_REFRESH_MS : Infinity);
        if (!parked) {
          parked = true;
          this.emit({ type: 'waiting', key: req.key });
        }
        gate.whenAborted(() => waiter?.interrupt());
        const woke = await waiter.park(cap);
        gate.whenAborted(undefined);
        if (woke === 'grant') {
          return (lease = this.grant(req, keys, token, waiter.grantedFence, performance.now(), started));
        }
      }
    } finally {
      this.gates.delete(gate);
      gate.dispose();
      if (waiter) this.bus.leave(waiter, lease !== null);
      if (!lease && sent) await this.withdraw(req.key, keys, token);
    }
  }

  /**
   * After a failed, timed-out or cancelled acquire: drop our place in the fair
   * queue, and release the lock if the server granted it just as we gave up.
   * A non-fair acquire whose every attempt was answered "busy" has nothing to undo.
   */
  private async withdraw(key: string, keys: MutexKeys, token: string): Promise<void> {
    try {
      await new AcquireGate(key, undefined).race(
        this.store.release(keys, token),
        this.options.commandTimeoutMs,
        'withdraw from',
      );
    } catch (err) {
      this.options.logger.debug(`Could not withdraw from lock "${key}"; its lease will expire: ${String(err)}`);
    }
  }

  /** Awaits one Redis call within the budget (at least commandTimeoutMs), as a typed error on failure. */
  private async ask<T>(gate: AcquireGate, key: string, action: string, work: Promise<T>, budgetMs: number): Promise<T> {
    try {
      return await gate.race(work, Math.max(budgetMs, this.options.commandTimeoutMs), action);
    } catch (err) {
      throw err instanceof LockError ? err : new LockBackendError(key, action, err);
    }
  }

  private grant(
    req: ResolvedAcquire,
    keys: MutexKeys,
    token: string,
    fence: number,
    leaseFrom: number,
    waitFrom: number,
  ): Lease {
    const lease = new Lease(
      this,
      req.key,
      keys,
      token,
      fence,
      req.leaseMs,
      req.renew,
      safetyMarginFor(req.leaseMs, this.options.safetyMarginMs),
      leaseFrom,
    );
    this.leases.add(lease);
    this.scheduler.track(lease);
    this.emit({
      type: 'acquired',
      key: req.key,
      fencingToken: fence,
      waitedMs: Math.round(performance.now() - waitFrom),
    });
    return lease;
  }

  private forget(lease: Lease): void {
    this.leases.delete(lease);
    this.scheduler.untrack(lease);
  }

  private async releaseQuietly(handle: LockHandle): Promise<void> {
    try {
      await handle.release();
    } catch (err) {
      this.options.logger.warn(
        `Could not release lock "${handle.key}"; it will expire with its lease: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }

  private async shutdown(): Promise<void> {
    this.closing = true;
    for (const gate of this.gates) gate.abort(SHUTTING_DOWN);
    this.scheduler.stop();
    const held = [...this.leases];
    this.leases.clear();
    await Promise.all(
      held.map(async (lease) => {
        lease.lose('the lock service is shutting down');
        lease.state = 'released';
        await this.withdraw(lease.key, lease.keys, lease.token);
      }),
    );
    await this.bus.close();
    if (this.connection.owned) await closeClient(this.client);
  }
}
