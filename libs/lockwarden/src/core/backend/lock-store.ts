import { LockConfigError } from '../../errors';
import type { LockInfo, SemaphoreInfo, ServerProbe } from './lock-info';
import type { MutexKeys, RwKeys, SemKeys } from './lock-keys';

/**
 * What one acquire takes: a mutex, one side of a read/write lock, or a semaphore's permits.
 * Decorators record it (`LockedMetadata.kind`).
 *
 * @example
 * ```ts
 * const kind: LockKind | undefined = getLockedMetadata(Reports.prototype.rebuild)?.kind; // 'write'
 * ```
 */
export type LockKind = 'mutex' | 'read' | 'write' | 'permit';

/** One lease to renew in a batch. */
export interface RenewItem {
  readonly redisKey: string;
  readonly ownerToken: string;
  readonly leaseMs: number;
  readonly kind: LockKind;
}

export interface StoreAcquire {
  readonly keys: MutexKeys;
  readonly ownerToken: string;
  readonly leaseMs: number;
  readonly fair: boolean;
  /** Public id a fair waiter is told about its grant by; never the secret token. */
  readonly waiterId: string;
  /** How long a fair waiter keeps its place without checking back. */
  readonly placeMs: number;
  /** The lease a release hands this waiter the lock with, until its watchdog extends it (a dead waiter's cost). */
  readonly handoffMs: number;
  /** The inbox of the caller's engine (WakeBus.inboxId): a release that hands it the lock tells only that. */
  readonly inbox: string;
  /** The number of this attempt within its acquire: a hand-off names the last one the server saw. */
  readonly seq: number;
  /**
   * The caller found the lock busy before: others may still wait beside it, so once it holds
   * the lock its release must wake them (an uncontended release publishes nothing).
   */
  readonly waited: boolean;
  /** Mint the fencing token with the grant: no plain SET, even when uncontended. */
  readonly fenced: boolean;
}

export interface StoreRwAcquire {
  readonly keys: RwKeys;
  readonly ownerToken: string;
  readonly leaseMs: number;
  readonly kind: 'read' | 'write';
  /** Reads: the token of the write lease this flow holds (a downgrade), or ''. */
  readonly heldWriteToken: string;
  /** Reads: wait behind waiting writers. */
  readonly writerPreference: boolean;
  /** How long a waiter keeps its place (a waiting writer's, or any queued one's) without checking back. */
  readonly placeMs: number;
  /** The lease a release hands this waiter the lock with, until its watchdog extends it. */
  readonly handoffMs: number;
  /** Take or keep a place in the lock's queue (see StoreAcquire for the fields that go with it). */
  readonly queued?: { readonly waiterId: string; readonly inbox: string; readonly seq: number };
}

/** The waiter a release hands its permits off to (sem-release.lua): its owner token, its ask and its lease. */
export interface PermitHandOff {
  readonly ownerToken: string;
  readonly permits: number;
  readonly leaseMs: number;
}

/**
 * The waiter of this process a release hands a mutex off to (hand-off-here.lua): its owner token, its
 * lease, and whether its fencing token is minted at the grant (`fenced`) or on first read.
 */
export interface MutexHandOff {
  readonly ownerToken: string;
  readonly leaseMs: number;
  readonly fenced: boolean;
}

export interface StoreSemAcquire {
  readonly keys: SemKeys;
  readonly ownerToken: string;
  readonly leaseMs: number;
  /** How many permits this holder takes. */
  readonly permits: number;
  /** The limit stored when the semaphore has none yet (its first use). */
  readonly initialLimit: number;
  /** How long a queued waiter keeps its place without checking back. */
  readonly placeMs: number;
  /** The lease a release hands this waiter its permits with, until its watchdog extends it. */
  readonly handoffMs: number;
  /** Take or keep a place in the queue (see StoreAcquire for the fields that go with it). */
  readonly queued?: { readonly waiterId: string; readonly inbox: string; readonly seq: number };
}

/**
 * An acquire's answer for a lock found busy without learning for how long (a plain grant:
 * SET NX answers no lease). As -(ms worth waiting), it is "busy, for an unknown time".
 */
export const BUSY_FOR_UNKNOWN = Number.NEGATIVE_INFINITY;

/**
 * A mutex acquire's answer for a grant that took no fencing token (a plain SET NX PX): the
 * holder mints one with `mint` when it first reads it. Real tokens are always above 0.
 */
export const UNMINTED = 0;

/** What LockStore.handOffMutex resolves when the lock went to the queue instead (another process waited). */
export const GIVEN_TO_QUEUE = -2;

/** A mutex lease this process holds, to release (LockStore.releaseHeld). */
export interface HeldRelease {
  readonly keys: MutexKeys;
  readonly ownerToken: string;
  /** A waiter of this process is known to wait for the lock: a release for nobody-waited would be wasted. */
  readonly waited: boolean;
  /** The lease's fencing token, when minted: with the owner token, what the lock's value is. */
  readonly fence: number | undefined;
}

/**
 * The lock operations one backend offers. Each call is one round trip, atomic on the server
 * for the lock it grants. Acquires resolve the fencing token (> 0) when granted, UNMINTED for
 * a mutex granted without one, else -(ms worth waiting), or BUSY_FOR_UNKNOWN when the lock is
 * busy for a time the answer does not say.
 */
export interface LockStore {
  acquire(req: StoreAcquire): Promise<number>;
  /**
   * Mints the fencing token of a mutex granted UNMINTED, while `ownerToken` still holds it
   * (fence-mint.lua); resolves the token already minted on a later call, and 0, minting
   * nothing, when the caller no longer holds the lock.
   */
  mint(keys: MutexKeys, ownerToken: string): Promise<number>;
  /** True when it released our lease; false when the lock was not ours (any queue place is dropped too). */
  release(keys: MutexKeys, ownerToken: string): Promise<boolean>;
  /**
   * Releases a mutex lease this process holds: as `release`, but a store may first try the
   * release of a lock nobody waited for, with fewer keys (see HeldRelease).
   */
  releaseHeld(item: HeldRelease): Promise<boolean>;
  /**
   * Hands a mutex `ownerToken` holds straight off to `to`, a waiter of this process, with its
   * full lease from now. `placed`: `to` holds its engine's place in the queue, which it gives
   * up. `runOver`: the process has kept the lock long enough; if another place waits in the
   * queue, the lock goes to the queue instead, as `release` gives it. Resolves `to`'s fencing
   * token (> 0), UNMINTED when it is minted on first read, -1 when `ownerToken` no longer held
   * the lock (nothing done), or GIVEN_TO_QUEUE. Only where `mutexHandOffHere`.
   */
  handOffMutex(
    keys: MutexKeys,
    ownerToken: string,
    to: MutexHandOff,
    placed: boolean,
    runOver: boolean,
  ): Promise<number>;
  /** Whether handOffMutex is available: a grant it makes needs no replica acknowledgement. */
  readonly mutexHandOffHere: boolean;
  rwAcquire(req: StoreRwAcquire): Promise<number>;
  /** True when it released our lease; false when we held nothing (a waiting writer's place is dropped too). */
  rwRelease(keys: RwKeys, ownerToken: string, kind: 'read' | 'write'): Promise<boolean>;
  /** Takes permits: the fencing token (>= 0) when granted, else -(ms until the earliest holder's lease ends). */
  semAcquire(req: StoreSemAcquire): Promise<number>;
  /** True when it released a live holder's permits; false when the token held none (or they had lapsed). */
  semRelease(keys: SemKeys, ownerToken: string): Promise<boolean>;
  /**
   * Releases a holder's permits and grants them to `to`, a waiter of this process, when its
   * ask fits; `fence` is the waiter's fencing token, or 0 when it was not granted (the
   * permits were then announced as by semRelease). Only where `permitHandOff` is true.
   */
  semHandOff(
    keys: SemKeys,
    ownerToken: string,
    to: PermitHandOff,
  ): Promise<{ released: boolean; fencingToken: number }>;
  /** Whether semHandOff is available: a grant it makes needs no replica acknowledgement. */
  readonly permitHandOff: boolean;
  /** Stores a semaphore's limit and wakes its waiters when it rose; resolves the previous one (0: none). */
  semLimit(keys: SemKeys, limit: number): Promise<number>;
  /** One semaphore's stored limit and live holders, for operators; never an owner token. */
  semInspect(keys: SemKeys, key: string): Promise<SemaphoreInfo>;
  /** Whether semaphores are available (not with a quorum). */
  readonly semaphores: boolean;
  /** One result per item, in order: whether the lease was still ours and is now renewed. */
  renew(items: readonly RenewItem[]): Promise<boolean[]>;
  /**
   * How long one attempt may take by design beyond a round trip (a quorum's node timeout,
   * waiting for replicas to acknowledge), added to an acquire's wait budget when it settles.
   */
  readonly attemptMs: number;
  /** Whether the topology has the server-side FIFO queue that waiters take places in, and releases hand locks to. */
  readonly fairQueue: boolean;
  /** Whether read/write locks are available. */
  readonly readWrite: boolean;
  /**
   * Whether read/write waiters take places in the lock's queue, and releases hand the lock to
   * them (not where a grant needs replicas' acknowledgement, nor on the memory backend, whose
   * waiters are woken to try).
   */
  readonly rwQueue: boolean;
  /** How much clock drift between servers to allow for on a lease of `leaseMs` (0 on one server). */
  clockDriftMs(leaseMs: number): number;
  /** One key's mutex or read/write state, for operators; never an owner token. */
  inspect(prefix: string, key: string): Promise<LockInfo>;
  /** Deletes one key's locks whoever holds them, and wakes the waiters; true when one was held. */
  forceUnlock(prefix: string, key: string): Promise<boolean>;
  /** Whether the servers behind the store answer, and have the scripts cached. */
  probe(timeoutMs: number): Promise<ServerProbe>;
}

/**
 * A store without semaphores (`semaphores: false`: the quorum topology) refuses them. A
 * permit count is one number that every grant reads and changes. Independent masters
 * each keep their own count, and a majority of them agreeing to a grant does not bound the
 * total: two majorities that overlap in one node can each admit a full set of holders
 * once that node restarts or its count lapses. Bounding it needs a consensus protocol.
 */
export function noSemaphore(key?: string): LockConfigError {
  return new LockConfigError(
    'semaphores are not available with a quorum: a permit count cannot be kept safe by a majority of ' +
      'independent masters without a consensus protocol. Use a single Redis, Sentinel or Cluster.',
    key,
  );
}

/** A store without read/write locks (`readWrite: false`: the quorum topology) refuses them. */
export function noReadWrite(key?: string): LockConfigError {
  return new LockConfigError(
    'read/write locks are not available with a quorum: use a mutex, or a single Redis, Sentinel or Cluster.',
    key,
  );
}

/** A store without the FIFO queue (`fairQueue: false`: quorum, or replicaAck) refuses a fair acquire. */
export function noFairQueue(key?: string): LockConfigError {
  return new LockConfigError(
    'fair is not available with a quorum (each node would keep its own queue) nor with replicaAck ' +
      '(a queued hand-off is not acknowledged by replicas).',
    key,
  );
}
