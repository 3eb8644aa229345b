import { LockConfigError, LockInterruptedError } from '../../errors';
import type { LockLostError } from '../../errors';
import { LockContext } from './lease-granter';
import type { LockHandle } from '../lease/lock-handle';
import { LeaseHandle } from '../lease/lease';
import type { Watchdog } from '../lease/watchdog';
import type { LockEventListener } from '../observe/events';
import { EventHub } from '../observe/telemetry';
import type { LockSurvey, SurveyOptions } from '../backend/lock-survey';
import type { LockLogger } from '../observe/logger';
import type { EvictionReport } from '../backend/server-eviction';
import type { LockHealthReport, LockInfo } from '../backend/lock-info';
import type { LockBackend, OpenedBackend } from '../backend/lock-backend';
import type { RedisClient } from '../redis/redis-client';
import type { TermLogs } from '../backend/term-log';
import { buildEngineParts } from './engine-parts';
import type { EngineHooks } from './engine-parts';
import { resolveEngineOptions } from '../options/engine-options';
// The engine's one door to the Redis backend: the topology its options name, when it is given no backend.
import { RedisBackend } from '../stores/redis-backend';
import type { LockEngineOptions, ResolvedEngineOptions } from '../options/engine-options';
import type { EngineShutdown } from './engine-shutdown';
import type { HeldLocks } from './held-locks';
import type { Until } from './method-call';
import type { LeaseGranter } from './lease-granter';
import type { LockAdmin } from './lock-admin';
import type { LockedCall, LockedOutcome, LockSpec } from './locked-call';
import type { AcquireOptions } from '../options/options';
import type { RwAcquireOptions } from '../rwlock/rw-options';
import type { PermitGranter } from './permit-granter';
import { checkCallback } from '../options/validate';
import { Semaphore } from '../semaphore/semaphore';
import type { PermitScope } from '../semaphore/semaphore';
import type { SemaphoreOptions } from '../semaphore/semaphore-options';
import { ScheduledJob } from '../schedule/scheduled-job';
import type { JobHost } from '../schedule/scheduled-job';
import type { CheckedScheduledOptions } from '../schedule/scheduled-options';
import type { TickSchedule } from '../schedule/tick-schedule';

/** Work run under a lock, given its handle. */
type Locked<T> = (handle: LockHandle) => T | Promise<T>;

/**
 * The framework-free lock engine behind `LockService`: reentrant, fenced
 * mutexes and read/write locks on Redis, woken by pub/sub, kept alive by one
 * batched watchdog.
 *
 * It is the acquire API and reentrancy. New leases come from its LeaseGranter, the
 * locks it holds and the work under them are its HeldLocks, operators' calls are its
 * LockAdmin, and its store comes from a LockBackend (Redis by default).
 *
 * @example
 * ```ts
 * const engine = new LockEngine({ redis: 'redis://127.0.0.1:6380' });
 * await engine.withLock('nightly-report', async (handle) => {
 *   await buildReport({ signal: handle.signal, fencingToken: await handle.fencingToken() });
 * });
 * await engine.close();
 * ```
 */
export class LockEngine {
  readonly options: ResolvedEngineOptions;
  private readonly backend: OpenedBackend;
  /** The watchdog that renews every lease, for health reporting. */
  readonly watchdog: Watchdog;
  private readonly context = new LockContext();
  private readonly held: HeldLocks;
  private readonly admin: LockAdmin;
  private readonly permits: PermitGranter;
  private readonly hub = new EventHub();
  private readonly jobHost: JobHost;
  private readonly stop: EngineShutdown;
  private readonly granter: LeaseGranter;

  /**
   * One call of a lock-decorated method, for frameworks: takes what `spec` asks for on
   * each key, one at a time in the order given (callers sort them), calls the method holding
   * them, and releases them once it and `call.until` have settled. On any failure to lock it
   * releases what it took and says why in the outcome; the method's own error rejects.
   *
   * @example
   * ```ts
   * const outcome = await engine.lockAndRun(['report:7'], { kind: 'mutex', options: {} }, {
   *   method: Reports.prototype.build, self: reports, args: [7], onBusy: 'skip',
   * });
   * if (outcome.ran) return outcome.value;
   * ```
   */
  readonly lockAndRun: (keys: readonly string[], spec: LockSpec, call: LockedCall) => Promise<LockedOutcome>;

  /**
   * @param backend where the locks live: by default the Redis topology `options` names;
   *   `new MemoryLockBackend()` (from `lockwarden/testing`) keeps them in memory.
   * @param hooks for frameworks (the Nest layer), see EngineHooks.
   * @internal `hooks`
   */
  constructor(options: LockEngineOptions, logger?: LockLogger, backend?: LockBackend, hooks: EngineHooks = {}) {
    this.options = hooks.resolved ?? resolveEngineOptions(options, logger, backend !== undefined);
    this.backend = (backend ?? new RedisBackend(this.options)).open(this.options.instanceId, this.options.logger);
    const parts = buildEngineParts(this.options, this.backend, this.context, this.hub);
    ({ watchdog: this.watchdog, held: this.held, stop: this.stop, admin: this.admin } = parts);
    ({ permits: this.permits, granter: this.granter, jobHost: this.jobHost } = parts);
    this.lockAndRun = parts.calls.run;
  }

  /**
   * Calls `listener` with every lock event of this engine from now on, as `onEvent` does;
   * returns the function that stops it. For listeners that come later than the options
   * (a dashboard, a test).
   *
   * @example
   * ```ts
   * const stop = engine.subscribe((e) => e.type === 'lost' && alert(e.key));
   * // ...
   * stop();
   * ```
   */
  subscribe(listener: LockEventListener): () => void {
    return this.hub.add(listener);
  }

  /**
   * One bounded look at every lock, semaphore and leadership under this engine's
   * `keyPrefix`, on every master (see `surveyLocks` for its cost). Rejects with a
   * LockBackendError when Redis does not answer; an in-memory backend has nothing to scan
   * and gives an empty survey.
   */
  survey(options: SurveyOptions = {}): Promise<LockSurvey> {
    return this.admin.survey(options);
  }

  /**
   * The Redis client (with a quorum, the first node's): the one given as `client`, or the
   * ioredis client Lockwarden made. There is none on the in-memory test backend.
   */
  get client(): RedisClient {
    if (!this.backend.client)
      throw new LockConfigError('This lock engine runs in memory (LockTestingModule): it has no Redis client.');
    return this.backend.client as RedisClient;
  }

  /** @internal The term logs of one leadership registry; none when the backend does not keep them. */
  openTermLogs(): TermLogs | undefined {
    return this.backend.termLogs?.();
  }

  /**
   * Locks held through this engine right now (each acquisition once, however many reentrant holds).
   *
   * @example
   * ```ts
   * if (engine.heldLocks > 0) logger.warn(`closing with ${engine.heldLocks} locks held`);
   * ```
   */
  get heldLocks(): number {
    return this.held.size;
  }

  /** True once shutdown began: new acquires are refused with LockAbortedError. */
  get shuttingDown(): boolean {
    return this.stop.started;
  }

  acquire(key: string, options?: AcquireOptions): Promise<LockHandle> {
    return this.granter.acquire(key, options);
  }

  tryAcquire(key: string, options?: AcquireOptions): Promise<LockHandle | null> {
    return this.granter.tryAcquire(key, options);
  }

  async withLock<T>(key: string, fn: Locked<T>, options?: AcquireOptions): Promise<T> {
    checkCallback('withLock', key, fn);
    const handle = await this.granter.acquire(key, options);
    return this.held.runLocked([handle], () => fn(handle));
  }

  /** A shared (read) lease: many readers at once, never together with a writer. */
  acquireRead(key: string, options?: RwAcquireOptions): Promise<LockHandle> {
    return this.granter.acquireRead(key, options);
  }

  /** An exclusive (write) lease: no reader and no other writer. Refused at once (LockUpgradeError) inside a read lease. */
  acquireWrite(key: string, options?: RwAcquireOptions): Promise<LockHandle> {
    return this.granter.acquireWrite(key, options);
  }

  async withReadLock<T>(key: string, fn: Locked<T>, options?: RwAcquireOptions): Promise<T> {
    checkCallback('withReadLock', key, fn);
    const handle = await this.granter.acquireRead(key, options);
    return this.held.runLocked([handle], () => fn(handle));
  }

  async withWriteLock<T>(key: string, fn: Locked<T>, options?: RwAcquireOptions): Promise<T> {
    checkCallback('withWriteLock', key, fn);
    const handle = await this.granter.acquireWrite(key, options);
    return this.held.runLocked([handle], () => fn(handle));
  }

  /**
   * A counting semaphore named `key` (see Semaphore). Cheap: it holds no state but its
   * limit, so make one per use or keep one. Throws LockConfigError for a bad key or
   * limit, and with a quorum. `scope` is for frameworks (LockService passes the request's).
   */
  semaphore(key: string, options: SemaphoreOptions, scope?: PermitScope): Semaphore {
    const semaphore = new Semaphore(this.permits, key, options, this.options.keyPrefix, scope);
    this.permits.check(semaphore.key);
    return semaphore;
  }

  /**
   * A scheduled job named `key`, whose ticks follow `schedule`: each tick runs at most once
   * across all instances, never two at once (see ScheduledJob). Cheap: make one per job.
   */
  scheduledJob(key: string, schedule: TickSchedule, options: CheckedScheduledOptions): ScheduledJob {
    this.granter.resolveMutex(key, options.acquire);
    return new ScheduledJob(this.jobHost, key, schedule, options);
  }

  /**
   * Runs `fn` holding `handles`, and releases them once it and `until` have settled: see
   * HeldLocks.hold.
   *
   * @example
   * ```ts
   * const handles = await Promise.all([engine.acquire('a'), engine.acquire('b')]);
   * await engine.runLocked(handles as LeaseHandle[], () => transfer('a', 'b'));
   * ```
   */
  runLocked<T>(handles: readonly LeaseHandle[], fn: () => T | Promise<T>, until?: Until): Promise<T> {
    return this.held.runLocked(handles, fn, until);
  }

  /** Asks the holders of these handles to stop, without releasing anything. */
  interrupt(handles: Iterable<LockHandle>, reason: string): void {
    for (const h of handles) {
      // A handle this engine did not make has no lease here to interrupt.
      if (h instanceof LeaseHandle && h.lease.host === this.held) {
        h.lease.interrupt(new LockInterruptedError(h.lease.key, reason));
      }
    }
  }

  /**
   * For frameworks: locked work ran to its end, but `lost` says its lock was lost meanwhile (a
   * request's lock lost while its response was still being sent). Logs it at ERROR once, counts
   * it (an `unprotected` event), and returns the LockLostError to report, with `workCompleted`
   * set, so that nobody is told to simply run the work again.
   *
   * @example
   * ```ts
   * const lost = handle.lostError;
   * if (lost) throw engine.lostAfterWork(lost);
   * ```
   */
  lostAfterWork(lost: LockLostError, name?: string): LockLostError {
    return this.held.lostAfterWork(lost, name);
  }

  /** Releases in reverse order; failures are logged, never thrown (the leases then expire). */
  releaseAll(handles: readonly LockHandle[]): Promise<void> {
    return this.held.releaseAll(handles);
  }

  /** The innermost lock held by the calling async context (for `key`, when given). */
  current(key?: string): LockHandle | undefined {
    return this.context.current(key)?.handle;
  }

  /** Who holds `key`, for how long, with which fencing token, and how many wait: see LockAdmin. */
  inspect(key: string): Promise<LockInfo> {
    return this.admin.inspect(key);
  }

  /** Dangerous: deletes `key`'s lock whoever holds it; see LockAdmin.forceUnlock. */
  forceUnlock(key: string): Promise<boolean> {
    return this.admin.forceUnlock(key);
  }

  /** Reachability, script cache and watchdog lag, for health checks. Never throws. */
  health(timeoutMs = 1_000): Promise<LockHealthReport> {
    return this.admin.health(timeoutMs);
  }

  /**
   * Whether a server may evict lock keys, its policy, and the keys evicted since startup: the
   * eviction fields of `health()`, without its PINGs. Never throws.
   *
   * @example
   * ```ts
   * const { keysMayBeEvicted, evictionPolicy } = await engine.eviction();
   * if (keysMayBeEvicted) console.warn(`locks live on a Redis that evicts (${evictionPolicy})`);
   * ```
   */
  eviction(timeoutMs = 1_000): Promise<EvictionReport> {
    return this.admin.eviction(timeoutMs);
  }

  /**
   * The first half of a graceful shutdown: cancel pending acquires, abort the
   * signal of every held lock ("shutting down"), then wait up to `graceMs`
   * until no locked work runs and no lock is held. The watchdog keeps renewing
   * meanwhile. Nothing is released here: work releases its own locks as it ends.
   */
  drain(graceMs: number = this.options.shutdownGraceMs): Promise<void> {
    return this.stop.drain(graceMs);
  }

  /**
   * Shuts down: drains (see `drain`), then stops the watchdog and closes the
   * connections this engine opened. A lock still held by running work after
   * the grace is **not** released, since its code may still act on it: it is
   * no longer renewed and expires with its lease, as after a crash, and one
   * warning names it.
   */
  close(): Promise<void> {
    return this.stop.close(this.options.shutdownGraceMs);
  }
}
