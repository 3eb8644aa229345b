import { LockConfigError, LockTimeoutError } from '../../errors';
import { Lease, LeaseHandle } from '../lease/lease';
import type { LeasedLock } from '../lease/lease';
import type { LockEvent } from '../observe/events';
import type { LockTracer } from '../observe/traces';
import { mutexKeys, rwKeys } from '../backend/lock-keys';
import type { SemKeys } from '../backend/lock-keys';
import { noReadWrite, UNMINTED } from '../backend/lock-store';
import type { LockStore } from '../backend/lock-store';
import { acquireLoop } from '../wait/acquire-loop';
import type { AttemptSpec, LoopContext } from '../wait/acquire-loop';
import type { ResolvedEngineOptions } from '../options/engine-options';
import type { HeldLocks } from './held-locks';
import { checkAcquireOptions, checkReadWriteOptions, defaultLockName, resolveAcquire } from '../options/options';
import type { AcquireOptions, CheckedAcquire, ResolvedAcquire, RwAcquireOptions } from '../options/options';
import { newOwnerToken } from '../backend/tokens';
import { checkKey } from '../options/validate';

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
const RW_OPTION_NAMES: ReadonlySet<string> = new Set(['writerPreference']);

/** The margin for one lease: never more than a third of it, so renewal always gets a chance. */
function safetyMarginFor(leaseMs: number, configured: number | undefined): number {
  const margin = configured ?? Math.min(2_000, Math.floor(leaseMs / 5));
  return Math.min(margin, Math.floor(leaseMs / 3));
}

/** What read/write waiters and semaphore waiters share: no place in a server-side queue, so nothing handed to them by id. */
const UNQUEUED = { fair: false, queueRefreshMs: undefined, handoffMs: Infinity, starvationMs: undefined } as const;

/**
 * Turns a checked request into a new lease: one attempt when the lock is free, the wait
 * loop when it is busy, then a lease handed to the held locks. Reentrancy is the engine's
 * business: this always makes a new holder.
 */
export class LeaseGranter {
  /** Frozen options checked already, by kind (see resolve). */
  private readonly mutexOptions = new WeakMap<object, CheckedAcquire>();
  private readonly rwOptions = new WeakMap<object, CheckedAcquire>();

  constructor(
    private readonly options: ResolvedEngineOptions,
    private readonly store: LockStore,
    private readonly held: HeldLocks,
    private readonly loop: LoopContext,
    private readonly emit: ((event: LockEvent) => void) | undefined,
    /** Spans of each acquisition and hold; undefined when traces are off or OpenTelemetry is absent. */
    private readonly tracer: LockTracer | undefined,
    /** Told of every new handle: how a request scope tracks locks taken during it. */
    private readonly onGrant: ((handle: LeaseHandle) => void) | undefined,
  ) {}

  resolveMutex(key: string, options: AcquireOptions | undefined): ResolvedAcquire {
    const req = this.resolve(key, options, undefined, this.mutexOptions);
    if (req.fair && !this.store.fairQueue) {
      throw new LockConfigError(
        'fair is not available in quorum mode (each node would keep its own queue) nor with replicaAck ' +
          '(a queued hand-off is not acknowledged by replicas).',
        req.key,
      );
    }
    return req;
  }

  resolveRw(key: string, options: RwAcquireOptions | undefined): ResolvedAcquire {
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
  mutex(req: ResolvedAcquire): Promise<LeaseHandle | number> {
    const keys = mutexKeys(this.options.keyPrefix, req.key);
    const ownerToken = newOwnerToken();
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
      attempt: (fair, waiterId, waited) =>
        store.acquire({
          keys,
          ownerToken,
          leaseMs: req.leaseMs,
          fair,
          waiterId,
          placeMs: QUEUE_PLACE_TTL_MS,
          handoffMs,
          waited,
          fenced: req.fenced,
        }),
      withdraw: () => store.release(keys, ownerToken),
    };
    return this.grantOrBusy(req, spec, { kind: 'mutex', keys }, ownerToken);
  }

  /** A new read or write lease, or how many ms the lock stays busy. */
  readWrite(
    req: ResolvedAcquire,
    kind: 'read' | 'write',
    heldWriteToken: string,
    writerPreference: boolean,
  ): Promise<LeaseHandle | number> {
    const keys = rwKeys(this.options.keyPrefix, req.key);
    const ownerToken = newOwnerToken();
    const store = this.store;
    const spec: AttemptSpec = {
      key: req.key,
      channel: keys.channel,
      ...UNQUEUED,
      refreshMs: kind === 'write' ? QUEUE_REFRESH_MS : undefined,
      attempt: () =>
        store.rwAcquire({
          keys,
          ownerToken,
          leaseMs: req.leaseMs,
          kind: kind,
          heldWriteToken,
          writerPreference,
          placeMs: QUEUE_PLACE_TTL_MS,
        }),
      withdraw: () => store.rwRelease(keys, ownerToken, kind),
    };
    return this.grantOrBusy(req, spec, { kind, keys }, ownerToken);
  }

  /**
   * A new holder of `permits` of a semaphore, or how many ms until its earliest holder's
   * lease ends. Waiters have no place on the server: a release passes its permits to a
   * parked waiter of its own process (HeldLocks.releasePermits) or wakes one waiter per
   * process for each permit, a raised limit wakes them all, and those that fit take their
   * permits.
   */
  permits(req: ResolvedAcquire, keys: SemKeys, permits: number, initialLimit: number): Promise<LeaseHandle | number> {
    const ownerToken = newOwnerToken();
    const store = this.store;
    const spec: AttemptSpec = {
      key: req.key,
      channel: keys.channel,
      ...UNQUEUED,
      refreshMs: undefined,
      attempt: () => store.semAcquire({ keys, ownerToken, leaseMs: req.leaseMs, permits, initialLimit }),
      withdraw: () => store.semRelease(keys, ownerToken),
      handOff: store.permitHandOff ? { ownerToken, permits, leaseMs: req.leaseMs } : undefined,
    };
    return this.grantOrBusy(req, spec, { kind: 'permit', keys }, ownerToken);
  }

  private grantOrBusy(
    req: ResolvedAcquire,
    spec: AttemptSpec,
    lock: LeasedLock,
    ownerToken: string,
  ): Promise<LeaseHandle | number> {
    if (!this.tracer) return this.grant(req, spec, lock, ownerToken);
    return this.tracer.acquire(req, lock.kind, () => this.grant(req, spec, lock, ownerToken));
  }

  private async grant(
    req: ResolvedAcquire,
    spec: AttemptSpec,
    lock: LeasedLock,
    ownerToken: string,
  ): Promise<LeaseHandle | number> {
    const started = performance.now();
    const result = await acquireLoop(this.loop, spec, req.waitMs, req.signal, req.leaseMs);
    if (!result.granted) return result.busyMs;
    // Quorum: the holder must stop before the validity Redlock promises, which allows for clock drift.
    const margin = safetyMarginFor(req.leaseMs, this.options.safetyMarginMs) + this.store.clockDriftMs(req.leaseMs);
    const lease = new Lease(
      this.held,
      lock,
      req.key,
      ownerToken,
      result.fencingToken === UNMINTED ? undefined : result.fencingToken,
      req.leaseMs,
      req.renew,
      margin,
      result.leaseFrom,
    );
    if (req.maxHoldMs !== undefined) lease.maxHoldUntil = result.leaseFrom + req.maxHoldMs;
    if (req.lockAtLeastMs !== undefined) lease.keepUntil = result.leaseFrom + req.lockAtLeastMs;
    lease.handOffs = result.handOffs ?? 0;
    lease.name = req.name;
    this.held.add(lease);
    this.emit?.({
      type: 'acquired',
      key: req.key,
      name: req.name,
      fencingToken: lease.fence,
      waitedMs: Math.round(performance.now() - started),
      ...(result.handedOff ? { handedOff: true } : {}),
    });
    const handle = new LeaseHandle(lease);
    this.onGrant?.(handle);
    return handle;
  }
}
