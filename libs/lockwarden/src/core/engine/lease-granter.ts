import { AsyncLocalStorage } from 'node:async_hooks';
import { LockLostError, LockTimeoutError, LockUpgradeError } from '../../errors';
import { tellRefusal } from '../../errors/refusal-notice';
import { Lease, LeaseHandle, safetyMarginFor } from '../lease/lease';
import type { LeasedLock, LeaseHost } from '../lease/lease';
import type { LockEvent } from '../observe/events';
import type { LockTracer } from '../observe/telemetry';
import { checkKey, mutexKeys, rwKeys } from '../backend/lock-keys';
import type { RwKeys, SemKeys } from '../backend/lock-keys';
import { noFairQueue, noReadWrite, UNMINTED } from '../backend/lock-store';
import type { LockKind, LockStore } from '../backend/lock-store';
import { acquireLoop } from '../wait/acquire-loop';
import type { AdmitAcquire } from './eviction-gate';
import type { LoopContext, LoopResult } from '../wait/loop-context';
import { mutexAttempt, permitAttempt, rwAttempt } from '../wait/attempts';
import type { Attempt } from '../wait/attempts';
import type { ResolvedEngineOptions } from '../options/engine-options';
import { checkAcquireOptions, defaultLockName, resolveAcquire } from '../options/options';
import { checkReadWriteOptions } from '../rwlock/rw-options';
import type { RwAcquireOptions } from '../rwlock/rw-options';
import type { AcquireOptions, CheckedAcquire, ResolvedAcquire } from '../options/options';

const RW_OPTION_NAMES: ReadonlySet<string> = new Set(['writerPreference']);

/**
 * The acquirer: resolves an acquire's options, re-enters a lock the calling flow already
 * holds (by its LockContext), or makes a new lease: one attempt when the lock is free, the
 * wait loop when it is busy, then a lease handed to the held locks.
 */
export class LeaseGranter {
  /** Frozen options checked already, by kind (see resolve). */
  private readonly mutexOptions = new WeakMap<object, CheckedAcquire>();
  private readonly rwOptions = new WeakMap<object, CheckedAcquire>();

  constructor(
    private readonly options: ResolvedEngineOptions,
    private readonly store: LockStore,
    /** The held locks (HeldLocks): each new lease goes to them, and calls back on them. */
    private readonly held: LeaseHost & { add(lease: Lease): void },
    private readonly context: LockContext,
    private readonly loop: LoopContext,
    private readonly emit: ((event: LockEvent) => void) | undefined,
    /** Spans of each acquisition and hold; undefined when traces are off or OpenTelemetry is absent. */
    private readonly tracer: LockTracer | undefined,
    /** What refuses acquires on a server that may evict (onEvictingServer: 'refuse'); undefined otherwise. */
    private readonly admit?: AdmitAcquire,
  ) {}

  /** A mutex: re-entered, or a new lease; LockTimeoutError when it stayed busy for the whole wait. */
  async acquire(key: string, options?: AcquireOptions): Promise<LeaseHandle> {
    const req = this.resolveMutex(key, options);
    return this.again(req.key, 'mutex') ?? this.orThrow(req, this.mutex(req));
  }

  /** A mutex in one attempt: re-entered, a new lease, or null when it is busy. */
  async tryAcquire(key: string, options?: AcquireOptions): Promise<LeaseHandle | null> {
    const req = this.resolveMutex(key, options);
    const reentered = this.again(req.key, 'mutex');
    if (reentered) return reentered;
    const got = await this.mutex({ ...req, waitMs: 0 });
    return typeof got === 'number' ? null : got;
  }

  /** A shared (read) lease: re-entered, a downgrade of the write lease this flow has, or a new lease. */
  async acquireRead(key: string, options?: RwAcquireOptions): Promise<LeaseHandle> {
    const req = this.resolveRw(key, options);
    const enclosing = this.rwEnclosing(req.key, 'read');
    if (enclosing instanceof LeaseHandle) return enclosing;
    const preference = options?.writerPreference !== false;
    const keys = rwKeys(this.options.keyPrefix, req.key);
    const attempt = this.rw(keys, req, 'read', enclosing?.ownerToken ?? '', preference);
    return this.orThrow(req, this.grant(req, attempt, { kind: 'read', keys }));
  }

  /** An exclusive (write) lease: re-entered, or a new lease; LockUpgradeError inside a read lease. */
  async acquireWrite(key: string, options?: RwAcquireOptions): Promise<LeaseHandle> {
    const req = this.resolveRw(key, options);
    const enclosing = this.rwEnclosing(req.key, 'write');
    if (enclosing instanceof LeaseHandle) return enclosing;
    const keys = rwKeys(this.options.keyPrefix, req.key);
    return this.orThrow(req, this.grant(req, this.rw(keys, req, 'write', '', true), { kind: 'write', keys }));
  }

  private rw(
    keys: RwKeys,
    req: ResolvedAcquire,
    kind: 'read' | 'write',
    heldWriteToken: string,
    writerPreference: boolean,
  ): Attempt {
    const { placeMs, safetyMarginMs } = this.options;
    return rwAttempt(keys, req, kind, heldWriteToken, writerPreference, this.store, placeMs, safetyMarginMs);
  }

  /** A new holder of `permits` of a semaphore, or how many ms until its earliest holder's lease ends. */
  permits(req: ResolvedAcquire, keys: SemKeys, permits: number, initialLimit: number): Promise<LeaseHandle | number> {
    const { placeMs, safetyMarginMs } = this.options;
    const attempt = permitAttempt(keys, req, permits, initialLimit, this.store, placeMs, safetyMarginMs);
    return this.grant(req, attempt, { kind: 'permit', keys });
  }

  /** Checks a mutex's key and options as an acquire would, asking Redis nothing. */
  resolveMutex(key: string, options: AcquireOptions | undefined): ResolvedAcquire {
    const req = this.resolve(key, options, undefined, this.mutexOptions);
    if (req.fair && !this.store.fairQueue) throw noFairQueue(req.key);
    return req;
  }

  private resolveRw(key: string, options: RwAcquireOptions | undefined): ResolvedAcquire {
    const req = this.resolve(key, options, RW_OPTION_NAMES, this.rwOptions);
    if (!this.store.readWrite) throw noReadWrite(req.key);
    checkReadWriteOptions(options, req.key);
    return req;
  }

  /**
   * Resolves an acquire's options with this engine's defaults. Options that cannot change (a
   * decorator freezes its own where it is applied) are checked once per engine and kind, and
   * only the key is checked per call: a decorated method's options are resolved once.
   */
  private resolve(
    key: string,
    options: AcquireOptions | undefined,
    extraNames: ReadonlySet<string> | undefined,
    cache: WeakMap<object, CheckedAcquire>,
  ): ResolvedAcquire {
    // Only an object can be frozen options: anything else is for the checks to refuse.
    if (typeof options !== 'object' || options === null || !Object.isFrozen(options)) {
      return resolveAcquire(key, options, this.options, extraNames);
    }
    let checked = cache.get(options);
    if (!checked) {
      checked = checkAcquireOptions(options, this.options, extraNames);
      cache.set(options, checked);
    }
    const checkedKey = checkKey(key);
    return { ...checked, key: checkedKey, name: checked.name ?? defaultLockName(checkedKey) };
  }

  /** Another handle on the lease of `key` this flow holds as `kind`, if it holds one. */
  private again(key: string, kind: LockKind): LeaseHandle | undefined {
    const frame = this.context.find(key, kind);
    return frame ? reenter(frame.lease) : undefined;
  }

  /**
   * Reentrancy of read/write locks: read in read and write in write re-enter; read in write
   * is a downgrade (a real read lease, proved by the write token, that outlives the write);
   * write in read is refused. Returns the reentrant handle, or the write lease a read may
   * downgrade from.
   */
  private rwEnclosing(key: string, kind: 'read' | 'write'): LeaseHandle | Lease | undefined {
    const write = this.context.find(key, 'write');
    if (kind === 'write') {
      if (write) return reenter(write.lease);
      if (this.context.find(key, 'read')) throw new LockUpgradeError(key);
      return undefined;
    }
    const read = this.context.find(key, 'read');
    if (read) return reenter(read.lease);
    if (write && write.lease.state === 'lost') return reenter(write.lease);
    return write?.lease;
  }

  /** The handle, or LockTimeoutError when the lock stayed busy for the whole wait. */
  async orThrow(req: ResolvedAcquire, got: Promise<LeaseHandle | number>): Promise<LeaseHandle> {
    const started = performance.now();
    const result = await got;
    if (typeof result !== 'number') return result;
    const waitedMs = Math.round(performance.now() - started);
    this.emit?.({ type: 'timeout', key: req.key, name: req.name, waitedMs });
    // An infinite wait is BUSY_FOR_UNKNOWN: no fair Retry-After to give.
    throw new LockTimeoutError(req.key, waitedMs, Number.isFinite(result) ? result : undefined);
  }

  /** A new mutex lease, or how many ms the lock stays busy. */
  private mutex(req: ResolvedAcquire): Promise<LeaseHandle | number> {
    const keys = mutexKeys(this.options.keyPrefix, req.key);
    const attempt = mutexAttempt(keys, req, this.store, this.options.placeMs, this.options.safetyMarginMs);
    return this.grant(req, attempt, { kind: 'mutex', keys });
  }

  /** A new lease, or how many ms the lock stays busy, under the acquisition's span when traces are on. */
  private grant(req: ResolvedAcquire, attempt: Attempt, lock: LeasedLock): Promise<LeaseHandle | number> {
    // Opened before anything is awaited: its parent is the span active where the caller asked.
    const trace = this.tracer?.start(req, lock.kind);
    const got = this.lease(req, attempt, lock);
    // Nothing records spans (the usual case): no promise of its own on the acquire path.
    if (!trace) return got;
    return got.then(
      (handle) => {
        trace.settled(handle);
        return handle;
      },
      (err: unknown) => {
        trace.failed(err);
        throw err;
      },
    );
  }

  private async lease(req: ResolvedAcquire, attempt: Attempt, lock: LeasedLock): Promise<LeaseHandle | number> {
    const started = performance.now();
    if (this.admit) await this.admit(req.key);
    let result: LoopResult;
    try {
      result = await acquireLoop(this.loop, attempt, req.waitMs, req.signal, req.leaseMs);
    } catch (err) {
      // Redis said no (an ACL, OOM, a script's error): said at WARN once per cause, not per acquire.
      tellRefusal(this.loop.logger, err);
      throw err;
    }
    if (!result.granted) return result.busyMs;
    // Quorum: the holder must stop before the validity Redlock promises, which allows for clock drift.
    const margin = safetyMarginFor(req.leaseMs, this.options.safetyMarginMs) + this.store.clockDriftMs(req.leaseMs);
    const lease = new Lease(
      this.held,
      lock,
      req.key,
      attempt.ownerToken,
      result.fencingToken === UNMINTED ? undefined : result.fencingToken,
      req.leaseMs,
      req.renew,
      margin,
      result.leaseFrom,
    );
    // A hand-off used as told holds the server's short hand-off lease until the watchdog,
    // at once, extends it.
    if (result.grantedMs !== undefined && result.grantedMs < req.leaseMs) {
      lease.startShort(result.grantedMs, safetyMarginFor(result.grantedMs, this.options.safetyMarginMs));
    }
    if (req.maxHoldMs !== undefined) lease.maxHoldUntil = result.leaseFrom + req.maxHoldMs;
    if (req.lockAtLeastMs !== undefined) lease.keepUntil = result.leaseFrom + req.lockAtLeastMs;
    lease.handOffs = result.handOffs ?? 0;
    lease.handOffsSince = result.handOffsSince;
    if (attempt.mutexHandOff) lease.handsOffHere = true;
    if (result.contended) lease.contended = true;
    lease.name = req.name;
    this.held.add(lease);
    this.emit?.({
      type: 'acquired',
      key: req.key,
      name: req.name,
      fencingToken: lease.mintedToken,
      waitedMs: Math.round(performance.now() - started),
      ...(result.handedOff ? { handedOff: true } : {}),
    });
    return new LeaseHandle(lease);
  }
}

/** Another hold on a lease this flow already has. */
function reenter(lease: Lease): LeaseHandle {
  if (lease.state === 'lost') throw new LockLostError(lease.key, 'the enclosing hold of this key was already lost');
  lease.handles++;
  return new LeaseHandle(lease);
}

/** One lock entered by a `withLock` callback or decorated method, linked to the locks around it. */
export interface LockFrame {
  readonly lease: Lease;
  readonly handle: LeaseHandle;
  readonly parent: LockFrame | undefined;
  /** The engine's context that entered it: frames of every engine share one chain. */
  readonly owner: LockContext;
}

/**
 * Every engine's frames, in one AsyncLocalStorage for the process. Node keeps an enabled
 * instance until it is disabled, and visits each one for every promise made: one per engine
 * would slow every await in the process, and keep each closed engine's frames, for good.
 */
const frames = new AsyncLocalStorage<LockFrame>();

/**
 * Reentrancy by ancestry: a flow may re-enter a lock that a callback enclosing
 * it holds. Frames live in AsyncLocalStorage, so sibling flows (two calls
 * under one Promise.all) never see each other's locks, and a bare acquire()
 * outside any callback never re-enters anything. One engine never sees another's frames.
 */
export class LockContext {
  run<T>(lease: Lease, handle: LeaseHandle, fn: () => T): T {
    return frames.run({ lease, handle, parent: frames.getStore(), owner: this }, fn);
  }

  /** The innermost enclosing frame of `kind` for `key` whose lock has not been released. */
  find(key: string, kind: LockKind): LockFrame | undefined {
    for (let f = frames.getStore(); f; f = f.parent) {
      if (f.owner === this && f.lease.key === key && f.lease.kind === kind && f.lease.state !== 'released') return f;
    }
    return undefined;
  }

  /** The innermost enclosing frame (for `key`, when given) whose lock has not been released. */
  current(key?: string): LockFrame | undefined {
    for (let f = frames.getStore(); f; f = f.parent) {
      if (f.owner !== this) continue;
      f.lease.check();
      if (f.lease.state !== 'released' && (key === undefined || f.lease.key === key)) return f;
    }
    return undefined;
  }
}
