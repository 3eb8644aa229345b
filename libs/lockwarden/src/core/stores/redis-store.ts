import type { SemaphoreInfo, ServerProbe } from '../backend/lock-info';
import type { RwKeys, SemKeys } from '../backend/lock-keys';
import type { LockStore, PermitHandOff, RenewItem, StoreRwAcquire, StoreSemAcquire } from '../backend/lock-store';
import type { RedisConnection } from '../redis/connection';
import { probeServers } from '../redis/health-probe';
import { renewLeases } from '../redis/renewals';
import type { ReplicaAck } from '../redis/replica-ack';
import { RedisMutexStore } from '../mutex/redis-mutex-store';
import { rwAcquire, rwRelease } from '../rwlock/redis-rw-store';
import { semAcquire, semHandOff, semInspect, semLimit, semRelease } from '../semaphore/redis-sem-store';

/**
 * The lock store of one Redis server, Sentinel or Cluster (or one quorum node): the mutex's
 * store part, with the read/write lock's and the semaphore's beside it, and the renewals of
 * every kind of lease, in one batch per round.
 */
export class RedisLockStore extends RedisMutexStore implements LockStore {
  readonly readWrite = true;
  readonly semaphores = true;

  constructor(client: RedisConnection, instanceId: string, ack?: ReplicaAck, plainGrants = true) {
    super(client, instanceId, ack, plainGrants);
  }

  /** As for locks: a hand-off in the release script is a grant no replica acknowledged. */
  get permitHandOff(): boolean {
    return !this.ack;
  }

  get rwQueue(): boolean {
    return !this.ack;
  }

  rwAcquire(req: StoreRwAcquire): Promise<number> {
    return rwAcquire(this, req);
  }

  rwRelease(keys: RwKeys, ownerToken: string, kind: 'read' | 'write'): Promise<boolean> {
    return rwRelease(this, keys, ownerToken, kind);
  }

  semAcquire(req: StoreSemAcquire): Promise<number> {
    return semAcquire(this, req);
  }

  semRelease(keys: SemKeys, ownerToken: string): Promise<boolean> {
    return semRelease(this, keys, ownerToken);
  }

  semHandOff(
    keys: SemKeys,
    ownerToken: string,
    to: PermitHandOff,
  ): Promise<{ released: boolean; fencingToken: number }> {
    return semHandOff(this, keys, ownerToken, to);
  }

  semInspect(keys: SemKeys, key: string): Promise<SemaphoreInfo> {
    return semInspect(this, keys, key);
  }

  semLimit(keys: SemKeys, limit: number): Promise<number> {
    return semLimit(this, keys, limit);
  }

  probe(timeoutMs: number): Promise<ServerProbe> {
    return probeServers([this.client], timeoutMs);
  }

  async renew(items: readonly RenewItem[]): Promise<boolean[]> {
    const results = await renewLeases(this.client, items, (script, keys, args) => this.run(script, keys, args));
    if (this.ack && items.length > 0) {
      // A renewal a failover loses would shorten the lease behind the holder's back.
      const short = await this.ack.check(items.map((item) => item.redisKey));
      if (short) throw short;
    }
    return results;
  }
}
