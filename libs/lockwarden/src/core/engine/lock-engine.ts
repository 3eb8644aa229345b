import {
  LockBackendError,
  LockConfigError,
  LockInterruptedError,
  LockLostError,
  LockTimeoutError,
  LockUpgradeError,
} from '../../errors';
import type { AcquireGate } from '../wait/acquire-gate';
import { acquireLoop } from '../wait/acquire-loop';
import type { AttemptSpec, LoopContext } from '../wait/acquire-loop';
import { resolveEngineOptions, safetyMarginFor } from './engine-options';
import type { LockEngineOptions, ResolvedEngineOptions } from './engine-options';
import { emitter } from '../observe/events';
import type { LockEvent } from '../observe/events';
import { Lease, LeaseHandle } from '../lease/lease';
import type { LeaseOwner } from '../lease/lease';
import { LockContext } from '../lease/lock-context';
import type { LockHandle } from '../lease/lock-handle';
import { mutexKeys, rwKeys } from '../store/lock-keys';
import type { MutexKeys, RwKeys } from '../store/lock-keys';
import type { LockLogger } from '../observe/logger';
import { RedisLockStore } from '../store/redis-store';
import { MemoryLockBackend } from '../store/memory-store';
import { QuorumLockStore } from '../store/quorum-store';
import { ReplicaAck } from '../store/replica-ack';
import type { LeaseKind, LockStore } from '../store/redis-store';
import { otelMetricsListener } from '../observe/metrics';
import type { LockHealthReport } from '../store/health-probe';
import type { LockInfo } from '../store/inspect';
import {
  checkInteger,
  checkKey,
  defaultLockName,
  describe,
  describeKey,
  MAX_MS,
  MIN_LEASE_MS,
  resolveAcquire,
} from './options';
import type { AcquireOptions, ResolvedAcquire, RwAcquireOptions } from './options';
import { closeClient, openClient } from '../store/redis-client';
import type { ClientLease, RedisClient, RedisSpec } from '../store/redis-client';
import { RenewalScheduler } from '../lease/renewal-scheduler';
import { loadScripts } from '../scripts/lua-script';
import { newOwnerToken } from './tokens';
import { WakeBus } from '../wait/wake-bus';

/**
 * A waiter with a place on the server (a queued mutex waiter, fair or starving, or a waiting
 * writer) checks back this often and keeps its place this long; a release hands a queued
 * mutex waiter the lock for at most HANDOFF_LEASE_MS until it confirms. So a waiter that
 * dies holds the others up by at most about one second: its place lapses, or the lock it
 * was handed does.
 */
const QUEUE_REFRESH_MS = 300;
const QUEUE_PLACE_TTL_MS = 1_000;
const HANDOFF_LEASE_MS = 1_000;
/** A non-fair waiter waiting longer than this joins the FIFO queue (see AttemptSpec.starvationMs). */
const STARVATION_MS = 5;
const SHUTTING_DOWN = new Error('the lock service is shutting down');
const RW_OPTION_NAMES: ReadonlySet<string> = new Set(['writerPreference']);

/**
 * The framework-free lock engine behind `LockService`: reentrant, fenced
 * mutexes and read/write locks on Redis, woken by pub/sub, kept alive by one
 * batched watchdog.
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
  private readonly redisClient: RedisClient | undefined;
  private readonly memory: MemoryLockBackend | undefined;
  private readonly connections: ClientLease[];
  private readonly store: LockStore;
  private readonly bus: WakeBus;
  private readonly scheduler: RenewalScheduler;
  private readonly context = new LockContext();
  private readonly leases = new Set<Lease>();
  private readonly running = new Set<Promise<unknown>>();
  /** Told of every new (non-reentrant) handle: how a request scope tracks locks taken during it. */
  onGrant: ((handle: LeaseHandle) => void) | undefined;
  private readonly loop: LoopContext;
  private closing = false;
  /** Set once the connections are closing: a late release then has nothing to talk to. */
  private stopped = false;
  private drained: Promise<void> | undefined;
  private readonly idleWaiters: (() => void)[] = [];
  private closed: Promise<void> | undefined;
  private readonly emit: ((event: LockEvent) => void) | undefined;

  constructor(options: LockEngineOptions, logger?: LockLogger) {
    this.options = resolveEngineOptions(options, logger);
    const quorum = this.options.quorum;
    const memory = this.options.redis instanceof MemoryLockBackend ? this.options.redis : undefined;
    this.memory = memory;
    this.connections = memory
      ? []
      : (quorum ? quorum.nodes : [this.options.redis as RedisSpec]).map((spec) => openClient(spec));
    for (const { client, owned } of this.connections) {
      if (owned)
        client.on('error', (err: Error) => this.options.logger.debug(`Redis connection error: ${err.message}`));
    }
    const clients = this.connections.map((c) => c.client);
    this.redisClient = clients[0];
    for (const client of clients) {
      client.on('ready', this.preload);
      if (client.status === 'ready') this.preload.call(client);
    }
    const ackOptions = this.options.replicaAck;
    const stores = clients.map(
      (client) =>
        new RedisLockStore(
          client,
          this.options.instanceId,
          ackOptions && new ReplicaAck(client, ackOptions, this.options.logger),
        ),
    );
    this.store = memory
      ? memory.store(this.options.instanceId)
      : quorum
        ? new QuorumLockStore(stores, quorum.nodeTimeoutMs)
        : stores[0];
    this.bus = new WakeBus(clients);
    memory?.attach(this.bus);
    this.emit = emitter(this.options.onEvent, this.options.metrics ? otelMetricsListener() : undefined);
    this.scheduler = new RenewalScheduler(this.store, this.options.logger, this.emit);
    this.loop = {
      bus: this.bus,
      gates: new Set<AcquireGate>(),
      shuttingDown: () => (this.closing ? SHUTTING_DOWN : undefined),
      commandTimeoutMs: this.options.commandTimeoutMs,
      emit: this.emit,
      logger: this.options.logger,
    };
  }

  /** The Redis client (in quorum mode, the first node's). There is none on the in-memory test backend. */
  get client(): RedisClient {
    if (!this.redisClient)
      throw new LockConfigError('This lock engine runs in memory (LockTestingModule): it has no Redis client.');
    return this.redisClient;
  }

  /** Locks held through this engine right now (each acquisition once, however many reentrant holds). */
  get heldCount(): number {
    return this.leases.size;
  }

  /** The watchdog, for health reporting. */
  get watchdog(): RenewalScheduler {
    return this.scheduler;
  }

  /** A 'ready' listener: (re)load the scripts into the server(s) the client just connected to. */
  private readonly preload = function (this: RedisClient): void {
    // Best effort: a script missing from the cache still runs, through the EVAL fallback.
    loadScripts(this).catch(() => undefined);
  };

  // ---- mutex -------------------------------------------------------------------------------

  async acquire(key: string, options?: AcquireOptions): Promise<LockHandle> {
    const req = this.resolveMutex(key, options);
    return this.reenter(req.key, 'mutex') ?? this.orThrow(req, this.acquireMutex(req));
  }

  async tryAcquire(key: string, options?: AcquireOptions): Promise<LockHandle | null> {
    const req = this.resolveMutex(key, options);
    const reentered = this.reenter(req.key, 'mutex');
    if (reentered) return reentered;
    const got = await this.acquireMutex({ ...req, waitMs: 0 });
    return typeof got === 'number' ? null : got;
  }

  async withLock<T>(key: string, fn: (lock: LockHandle) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    checkCallback('withLock', key, fn);
    const handle = (await this.acquire(key, options)) as LeaseHandle;
    return this.hold([handle], () => fn(handle));
  }

  // ---- read/write --------------------------------------------------------------------------

  /** A shared hold: many readers at once, never together with a writer. */
  async acquireRead(key: string, options?: RwAcquireOptions): Promise<LockHandle> {
    const req = this.resolveRw(key, options);
    const enclosing = this.reenterRw(req.key, 'read');
    if (enclosing instanceof LeaseHandle) return enclosing;
    return this.orThrow(req, this.acquireRw(req, 'read', enclosing?.token ?? '', rwPreference(options)));
  }

  /** An exclusive hold: no reader and no other writer. Refused at once (LockUpgradeError) inside a read hold. */
  async acquireWrite(key: string, options?: RwAcquireOptions): Promise<LockHandle> {
    const req = this.resolveRw(key, options);
    const enclosing = this.reenterRw(req.key, 'write');
    if (enclosing instanceof LeaseHandle) return enclosing;
    return this.orThrow(req, this.acquireRw(req, 'write', '', true));
  }

  async withReadLock<T>(key: string, fn: (lock: LockHandle) => T | Promise<T>, options?: RwAcquireOptions): Promise<T> {
    checkCallback('withReadLock', key, fn);
    const handle = (await this.acquireRead(key, options)) as LeaseHandle;
    return this.hold([handle], () => fn(handle));
  }

  async withWriteLock<T>(
    key: string,
    fn: (lock: LockHandle) => T | Promise<T>,
    options?: RwAcquireOptions,
  ): Promise<T> {
    checkCallback('withWriteLock', key, fn);
    const handle = (await this.acquireWrite(key, options)) as LeaseHandle;
    return this.hold([handle], () => fn(handle));
  }

  // ---- holding ------------------------------------------------------------------------------

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
  hold<T>(
    handles: readonly LeaseHandle[],
    fn: () => T | Promise<T>,
    until?: PromiseLike<unknown> | (() => PromiseLike<unknown> | undefined),
  ): Promise<T> {
    let run = fn;
    for (let i = handles.length - 1; i >= 0; i--) {
      const handle = handles[i];
      const inner = run;
      run = () => this.context.run(handle.lease, handle, inner);
    }
    let settled: Promise<T>;
    try {
      settled = Promise.resolve(run());
    } catch (err) {
      settled = Promise.reject(err);
    }
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
   * Takes several locks one at a time, in the order given (callers sort them,
   * so two calls never wait on each other crosswise). On any failure it
   * releases what it took. With `busy: 'skip'` a held key yields `null`; with
   * `'throw'` it fails at once with LockTimeoutError.
   */
  async acquireAll(
    keys: readonly string[],
    options: AcquireOptions,
    busy: 'wait' | 'throw' | 'skip',
    kind: LeaseKind = 'mutex',
  ): Promise<LeaseHandle[] | null> {
    const opts = busy === 'wait' ? options : { ...options, waitMs: 0 };
    if (keys.length === 1) {
      // The common case, without the bookkeeping several keys need.
      const handle = await this.acquireKind(keys[0], opts, kind, busy === 'skip');
      if (handle) return [handle as LeaseHandle];
      this.emit?.({ type: 'skipped', key: keys[0], name: options.name ?? defaultLockName(keys[0]) });
      await this.logSkip(keys[0]);
      return null;
    }
    const held: LeaseHandle[] = [];
    try {
      for (const key of keys) {
        const handle = await this.acquireKind(key, opts, kind, busy === 'skip');
        if (!handle) {
          await this.releaseAll(held);
          this.emit?.({ type: 'skipped', key, name: options.name ?? defaultLockName(key) });
          await this.logSkip(key);
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

  /** Asks the holders of these handles to stop, without releasing anything yet. */
  interrupt(handles: Iterable<LockHandle>, reason: string): void {
    for (const h of handles) {
      const lease = (h as LeaseHandle).lease;
      lease?.interrupt(new LockInterruptedError(lease.key, reason));
    }
  }

  /**
   * The first half of a graceful shutdown: cancel pending acquires, abort the
   * signal of every held lock ("shutting down"), then wait up to `graceMs`
   * until no locked work runs and no lock is held. The watchdog keeps renewing
   * meanwhile. Nothing is released here: work releases its own locks as it ends.
   */
  drain(graceMs: number = this.options.shutdownGraceMs): Promise<void> {
    this.drained ??= this.drainOnce(graceMs);
    return this.drained;
  }

  private async drainOnce(graceMs: number): Promise<void> {
    this.closing = true;
    for (const gate of this.loop.gates) gate.abort(SHUTTING_DOWN);
    for (const lease of this.leases) {
      lease.interrupt(new LockInterruptedError(lease.key, 'the application is shutting down'));
    }
    if (this.isIdle()) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => this.idleWaiters.push(resolve)),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
      }),
    ]);
    clearTimeout(timer);
  }

  private isIdle(): boolean {
    return this.running.size === 0 && this.leases.size === 0;
  }

  private checkIdle(): void {
    if (this.idleWaiters.length === 0 || !this.isIdle()) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /** Releases in reverse order; failures are logged, never thrown (the leases then expire). */
  async releaseAll(handles: readonly LockHandle[]): Promise<void> {
    if (handles.length === 1) return this.releaseQuietly(handles[0]);
    for (let i = handles.length - 1; i >= 0; i--) await this.releaseQuietly(handles[i]);
  }

  /** The innermost lock held by the calling async context (for `key`, when given). */
  current(key?: string): LockHandle | undefined {
    return this.context.current(key)?.handle;
  }

  // ---- inspection and admin ----------------------------------------------------------------

  /**
   * Who holds `key` (as a mutex or a read/write lock), for how long, with which fencing
   * token, and how many waiters are queued. Never exposes owner tokens. In quorum mode
   * the lock counts as held when a majority of nodes hold it.
   */
  async inspect(key: string): Promise<LockInfo> {
    const k = checkKey(key);
    try {
      return await this.store.inspect(this.options.keyPrefix, k);
    } catch (err) {
      throw new LockBackendError(k, 'inspect', err);
    }
  }

  /**
   * Dangerous: deletes `key`'s lock (mutex and read/write) whoever holds it, and wakes its
   * waiters. Nothing is aborted remotely: holders find out at their next renewal, and until
   * then two holders may run at once. Meant for operators clearing a lock they know is stuck.
   * Resolves true when a lock was held.
   */
  async forceUnlock(key: string): Promise<boolean> {
    const k = checkKey(key);
    try {
      return await this.store.forceUnlock(this.options.keyPrefix, k);
    } catch (err) {
      throw new LockBackendError(k, 'force-unlock', err);
    }
  }

  /** Reachability, script cache and watchdog lag, for health checks. Never throws. */
  async health(timeoutMs = 1_000): Promise<LockHealthReport> {
    return {
      ...(await this.store.probe(timeoutMs)),
      watchdogLagMs: Math.round(this.scheduler.lagMs),
      heldLocks: this.leases.size,
    };
  }

  /**
   * Shuts down: drains (see `drain`), then stops the watchdog and closes the
   * connections this engine opened. A lock still held by running work after
   * the grace is **not** released, since its code may still act on it: it is
   * no longer renewed and expires with its lease, as after a crash, and one
   * warning names it.
   */
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
    if (this.stopped) return false;
    try {
      const released = await this.releaseOnServer(lease);
      this.emit?.({
        type: 'released',
        key: lease.key,
        name: lease.name,
        fencingToken: lease.fencingToken,
        heldMs: Math.round(performance.now() - lease.acquiredAt),
      });
      return released;
    } catch (err) {
      throw new LockBackendError(lease.key, 'release', err);
    }
  }

  async extendLease(lease: Lease, ms: number | undefined): Promise<void> {
    const leaseMs = ms === undefined ? lease.leaseMs : checkInteger('extend(ms)', ms, MIN_LEASE_MS, MAX_MS, lease.key);
    if (lease.state !== 'held') throw new LockLostError(lease.key, `it was already ${lease.state}`);
    const sentAt = performance.now();
    const grantedMs = Math.min(leaseMs, Math.floor(lease.maxHoldUntil - sentAt));
    if (grantedMs < MIN_LEASE_MS) throw new LockLostError(lease.key, 'it reached its maxHoldMs and cannot be extended');
    let renewed: boolean[];
    try {
      renewed = await this.store.renew([
        { lockKey: lease.keys.lock, token: lease.token, leaseMs: grantedMs, kind: lease.kind },
      ]);
    } catch (err) {
      throw new LockBackendError(lease.key, 'extend', err);
    }
    if (lease.state !== 'held') throw new LockLostError(lease.key, `it was ${lease.state} while extending`);
    if (!renewed[0]) {
      const reason = 'the key is no longer ours in Redis (it expired or was deleted)';
      if (this.scheduler.lost(lease, reason)) this.forget(lease);
      throw lease.lostError ?? new LockLostError(lease.key, reason);
    }
    lease.leaseMs = leaseMs;
    lease.confirm(sentAt, grantedMs);
    this.scheduler.reschedule(lease);
    this.emit?.({ type: 'extended', key: lease.key, name: lease.name, fencingToken: lease.fencingToken });
  }

  // ---- acquisition internals ----------------------------------------------------------------

  private acquireKind(
    key: string,
    options: AcquireOptions,
    kind: LeaseKind,
    once: boolean,
  ): Promise<LockHandle | null> {
    if (kind === 'mutex') return once ? this.tryAcquire(key, options) : this.acquire(key, options);
    const rw = kind === 'read' ? this.acquireRead(key, options) : this.acquireWrite(key, options);
    if (!once) return rw;
    return rw.catch((err: unknown) => {
      if (err instanceof LockTimeoutError) return null;
      throw err;
    });
  }

  /** Says who holds a skipped lock: the instance id stored beside it, never the owner token. */
  private async logSkip(key: string): Promise<void> {
    let holder: string | undefined;
    try {
      holder = (await this.store.inspect(this.options.keyPrefix, key)).holders[0]?.instanceId;
    } catch {
      holder = 'another instance';
    }
    this.options.logger.debug(`Skipped "${key}": it is held by ${holder ?? 'an instance that just released it'}.`);
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

  private reenter(key: string, kind: LeaseKind): LeaseHandle | undefined {
    const frame = this.context.find(key, kind);
    return frame ? this.holdAgain(frame.lease) : undefined;
  }

  /** Another hold on a lease this flow already has. */
  private holdAgain(lease: Lease): LeaseHandle {
    if (lease.state === 'lost') throw new LockLostError(lease.key, 'the enclosing hold of this key was already lost');
    lease.holds++;
    return new LeaseHandle(lease);
  }

  /**
   * Reentrancy of read/write locks by ancestry: read in read and write in
   * write re-enter; read in write is a downgrade (a real read hold, proved by
   * the write token, that outlives the write); write in read is refused.
   * Returns the reentrant handle, or the write lease a read may downgrade from.
   */
  private reenterRw(key: string, mode: 'read' | 'write'): LeaseHandle | Lease | undefined {
    const write = this.context.find(key, 'write');
    if (mode === 'write') {
      if (write) return this.holdAgain(write.lease);
      if (this.context.find(key, 'read')) throw new LockUpgradeError(key);
      return undefined;
    }
    const read = this.context.find(key, 'read');
    if (read) return this.holdAgain(read.lease);
    if (write && write.lease.state === 'lost') return this.holdAgain(write.lease);
    return write?.lease;
  }

  private resolveMutex(key: string, options: AcquireOptions | undefined): ResolvedAcquire {
    const req = resolveAcquire(key, options, this.options);
    if (req.fair && !this.store.fairQueue) {
      throw new LockConfigError(
        'fair is not available in quorum mode (each node would keep its own queue) nor with replicaAck ' +
          '(a queued hand-off is not acknowledged by replicas).',
        req.key,
      );
    }
    return req;
  }

  private resolveRw(key: string, options: RwAcquireOptions | undefined): ResolvedAcquire {
    const req = resolveAcquire(key, options, this.options, RW_OPTION_NAMES);
    if (!this.store.readWrite) throw QuorumLockStore.noReadWrite(req.key);
    const pref = (options as { writerPreference?: unknown } | undefined)?.writerPreference;
    if (pref !== undefined && typeof pref !== 'boolean') {
      throw new LockConfigError(`writerPreference must be a boolean, got ${describe(pref)}.`, req.key);
    }
    if (req.fair) {
      throw new LockConfigError(
        'fair is not an option of read/write locks: they use writer preference instead.',
        req.key,
      );
    }
    return req;
  }

  private async orThrow(req: ResolvedAcquire, got: Promise<LockHandle | number>): Promise<LockHandle> {
    const started = performance.now();
    const result = await got;
    if (typeof result !== 'number') return result;
    const waitedMs = Math.round(performance.now() - started);
    this.emit?.({ type: 'timeout', key: req.key, name: req.name, waitedMs });
    throw new LockTimeoutError(req.key, waitedMs, result);
  }

  private async acquireMutex(req: ResolvedAcquire): Promise<LockHandle | number> {
    const keys = mutexKeys(this.options.keyPrefix, req.key);
    const token = newOwnerToken();
    const store = this.store;
    const handoffMs = Math.min(req.leaseMs, HANDOFF_LEASE_MS);
    const spec: AttemptSpec = {
      key: req.key,
      channel: keys.channel,
      fair: req.fair,
      refreshMs: undefined,
      queueRefreshMs: QUEUE_REFRESH_MS,
      handoffMs,
      starvationMs: store.fairQueue ? STARVATION_MS : undefined,
      attempt: (fair, waiterId) =>
        store.acquire({
          keys,
          token,
          leaseMs: req.leaseMs,
          fair,
          waiterId,
          waiterTtlMs: QUEUE_PLACE_TTL_MS,
          grantMs: handoffMs,
        }),
      withdraw: () => store.release(keys, token),
    };
    return this.grantOrBusy(req, spec, 'mutex', keys, token);
  }

  private async acquireRw(
    req: ResolvedAcquire,
    mode: 'read' | 'write',
    heldWriteToken: string,
    writerPreference: boolean,
  ): Promise<LockHandle | number> {
    const keys = rwKeys(this.options.keyPrefix, req.key);
    const token = newOwnerToken();
    const store = this.store;
    const spec: AttemptSpec = {
      key: req.key,
      channel: keys.channel,
      fair: false,
      refreshMs: mode === 'write' ? QUEUE_REFRESH_MS : undefined,
      queueRefreshMs: undefined,
      handoffMs: Infinity,
      starvationMs: undefined,
      attempt: () =>
        store.rwAcquire({
          keys,
          token,
          leaseMs: req.leaseMs,
          mode,
          heldWriteToken,
          writerPreference,
          placeTtlMs: QUEUE_PLACE_TTL_MS,
        }),
      withdraw: () => store.rwRelease(keys, token, mode),
    };
    return this.grantOrBusy(req, spec, mode, keys, token);
  }

  private async grantOrBusy(
    req: ResolvedAcquire,
    spec: AttemptSpec,
    kind: LeaseKind,
    keys: MutexKeys | RwKeys,
    token: string,
  ): Promise<LockHandle | number> {
    const started = performance.now();
    const result = await acquireLoop(this.loop, spec, req.waitMs, req.signal);
    if (!result.granted) return result.busyMs;
    // Quorum: the holder must stop before the validity Redlock promises, which allows for clock drift.
    const margin = safetyMarginFor(req.leaseMs, this.options.safetyMarginMs) + this.store.clockDriftMs(req.leaseMs);
    const lease = new Lease(
      this,
      kind,
      req.key,
      keys,
      token,
      result.fence,
      req.leaseMs,
      req.renew,
      margin,
      result.leaseFrom,
    );
    if (req.maxHoldMs !== undefined) lease.maxHoldUntil = result.leaseFrom + req.maxHoldMs;
    if (req.lockAtLeastMs !== undefined) lease.keepUntil = result.leaseFrom + req.lockAtLeastMs;
    lease.name = req.name;
    this.leases.add(lease);
    this.scheduler.track(lease);
    this.emit?.({
      type: 'acquired',
      key: req.key,
      name: req.name,
      fencingToken: result.fence,
      waitedMs: Math.round(performance.now() - started),
    });
    const handle = new LeaseHandle(lease);
    this.onGrant?.(handle);
    return handle;
  }

  /**
   * Deletes our hold, or, before its lockAtLeastMs is up, only shortens the
   * lease to what remains of it, so the lock stays taken until then.
   */
  private async releaseOnServer(lease: Lease): Promise<boolean> {
    const keepMs = Math.ceil(lease.keepUntil - performance.now());
    if (keepMs >= MIN_LEASE_MS) {
      const [kept] = await this.store.renew([
        { lockKey: lease.keys.lock, token: lease.token, leaseMs: keepMs, kind: lease.kind },
      ]);
      return kept;
    }
    if (lease.kind === 'mutex') return this.store.release(lease.keys as MutexKeys, lease.token);
    return this.store.rwRelease(lease.keys as RwKeys, lease.token, lease.kind);
  }

  private forget(lease: Lease): void {
    this.leases.delete(lease);
    this.scheduler.untrack(lease);
    this.checkIdle();
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
    await this.drain();
    this.stopped = true;
    this.scheduler.stop();
    const abandoned = [...this.leases];
    this.leases.clear();
    const reason = 'the lock service shut down while the work holding it still ran; it expires with its lease';
    for (const lease of abandoned) {
      this.scheduler.untrack(lease);
      // One warning below names them all.
      this.scheduler.lost(lease, reason, false);
    }
    if (abandoned.length > 0) {
      const keys = abandoned.map((l) => `"${l.key}"`).join(', ');
      this.options.logger.warn(
        `Shut down with ${abandoned.length} lock(s) still held by running work (${keys}). They were not released, ` +
          'because that work may still act on them: they expire with their lease, as after a crash.',
      );
    }
    await this.bus.close();
    this.memory?.detach(this.bus);
    for (const c of this.connections) c.client.off('ready', this.preload);
    await Promise.all(this.connections.filter((c) => c.owned).map((c) => closeClient(c.client)));
  }
}

/** The first of the handles whose lease was lost (not merely interrupted), if any. */
function firstLoss(handles: readonly LeaseHandle[]): LockLostError | undefined {
  for (const h of handles) if (h.lease.lostError) return h.lease.lostError;
  return undefined;
}

function noop(): void {}

function checkCallback(method: string, key: unknown, fn: unknown): void {
  if (typeof fn !== 'function') {
    throw new LockConfigError(`${method} needs a function to run under lock ${describeKey(key)}.`);
  }
}

function rwPreference(options: RwAcquireOptions | undefined): boolean {
  return options?.writerPreference !== false;
}
