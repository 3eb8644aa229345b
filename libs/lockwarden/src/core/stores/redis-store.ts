import type { LockInfo, SemaphoreInfo, ServerProbe } from '../backend/lock-info';
import type { MutexKeys, RwKeys, SemKeys } from '../backend/lock-keys';
import type {
  LockStore,
  MutexHandOff,
  PermitHandOff,
  RenewItem,
  StoreAcquire,
  StoreRwAcquire,
  StoreSemAcquire,
} from '../backend/lock-store';
import type { RedisConnection } from '../redis/connection';
import { probeServers } from '../redis/health-probe';
import { renewLeases } from '../redis/renewals';
import type { ReplicaAck } from '../redis/replica-ack';
import { ACK_ATTEMPTS } from '../redis/store-context';
import type { StoreContext } from '../redis/store-context';
import { forceUnlockKey, inspectLock } from '../mutex/redis-inspect';
import { RedisMutexStore } from '../mutex/redis-mutex-store';
import { RedisRwStore } from '../rwlock/redis-rw-store';
import { RedisSemStore } from '../semaphore/redis-sem-store';

/**
 * The lock store of one Redis server, Sentinel or Cluster (or one quorum node), put together
 * from the features' store parts: each operation below is passed to the part that serves it.
 * The parts share one store context (the connection, this engine's instance id, the replica
 * acknowledgement, how a release publishes), never this store. What every kind shares is
 * here: the renewals of every kind of lease, in one batch per round, and the health probe.
 */
export class RedisLockStore implements LockStore {
  /** Mutexes: grants, fencing tokens, releases (mutex/). */
  private readonly mutex: RedisMutexStore;
  /** Read and write leases (rwlock/). */
  private readonly rw: RedisRwStore;
  /** Semaphores' permits and limits (semaphore/). */
  private readonly sem: RedisSemStore;

  readonly readWrite = true;
  readonly semaphores = true;
  readonly attemptMs: number;
  readonly fairQueue: boolean;
  readonly rwQueue: boolean;
  readonly permitHandOff: boolean;
  readonly mutexHandOffHere: boolean;
  /** The mutex's held releases, exposed as they are: no frame of this store's on a lease's way out. */
  readonly releaseHeld: LockStore['releaseHeld'];

  constructor(
    readonly client: RedisConnection,
    instanceId: string,
    private readonly ack?: ReplicaAck,
    plainGrants = true,
  ) {
    const ctx: StoreContext = { client, instanceId, ack, publishCommand: client.cluster ? 'spublish' : 'publish' };
    this.mutex = new RedisMutexStore(ctx, plainGrants);
    this.rw = new RedisRwStore(ctx);
    this.sem = new RedisSemStore(ctx);
    this.releaseHeld = this.mutex.releaseHeld;
    // Up to ACK_ATTEMPTS grants, each waiting for its replicas, and a give-back between.
    this.attemptMs = ack ? ACK_ATTEMPTS * ack.timeoutMs : 0;
    // A queue hands a lock or permits off inside the releaser's script, with no WAIT by the
    // new holder. Under replicaAck every grant must be acknowledged: no queue, no hand-off.
    this.fairQueue = this.rwQueue = this.permitHandOff = this.mutexHandOffHere = ack === undefined;
  }

  // ---- mutexes: mutex/redis-mutex-store.ts --------------------------------------------------

  acquire(req: StoreAcquire): Promise<number> {
    return this.mutex.acquire(req);
  }

  mint(keys: MutexKeys, ownerToken: string): Promise<number> {
    return this.mutex.mint(keys, ownerToken);
  }

  release(keys: MutexKeys, ownerToken: string): Promise<boolean> {
    return this.mutex.release(keys, ownerToken);
  }

  handOffMutex(
    keys: MutexKeys,
    ownerToken: string,
    to: MutexHandOff,
    placed: boolean,
    runOver: boolean,
  ): Promise<number> {
    return this.mutex.handOffHere(keys, ownerToken, to, placed, runOver);
  }

  /** A quorum's: records the fencing token it granted on this node. */
  raiseFence(keys: MutexKeys, ownerToken: string, fencingToken: number): Promise<boolean> {
    return this.mutex.raiseFence(keys, ownerToken, fencingToken);
  }

  // ---- read/write locks: rwlock/redis-rw-store.ts -------------------------------------------

  rwAcquire(req: StoreRwAcquire): Promise<number> {
    return this.rw.acquire(req);
  }

  rwRelease(keys: RwKeys, ownerToken: string, kind: 'read' | 'write'): Promise<boolean> {
    return this.rw.release(keys, ownerToken, kind);
  }

  // ---- semaphores: semaphore/redis-sem-store.ts ---------------------------------------------

  semAcquire(req: StoreSemAcquire): Promise<number> {
    return this.sem.acquire(req);
  }

  semRelease(keys: SemKeys, ownerToken: string): Promise<boolean> {
    return this.sem.release(keys, ownerToken);
  }

  semHandOff(
    keys: SemKeys,
    ownerToken: string,
    to: PermitHandOff,
  ): Promise<{ released: boolean; fencingToken: number }> {
    return this.sem.handOff(keys, ownerToken, to);
  }

  semLimit(keys: SemKeys, limit: number): Promise<number> {
    return this.sem.setLimit(keys, limit);
  }

  semInspect(keys: SemKeys, key: string): Promise<SemaphoreInfo> {
    return this.sem.inspect(keys, key);
  }

  // ---- a key's mutex and read/write lock, for operators: mutex/redis-inspect.ts -------------

  inspect(prefix: string, key: string): Promise<LockInfo> {
    return inspectLock(this.client, prefix, key);
  }

  forceUnlock(prefix: string, key: string): Promise<boolean> {
    return forceUnlockKey(this.client, prefix, key);
  }

  // ---- every kind ---------------------------------------------------------------------------

  /** One server's clock times every lease on it: no drift to allow for. */
  clockDriftMs(): number {
    return 0;
  }

  probe(timeoutMs: number): Promise<ServerProbe> {
    return probeServers([this.client], timeoutMs);
  }

  async renew(items: readonly RenewItem[]): Promise<boolean[]> {
    const client = this.client;
    const results = await renewLeases(client, items, (script, keys, args) => client.run(script, keys, args));
    if (this.ack && items.length > 0) {
      // A renewal a failover loses would shorten the lease behind the holder's back.
      const short = await this.ack.check(items.map((item) => item.redisKey));
      if (short) throw short;
    }
    return results;
  }
}
