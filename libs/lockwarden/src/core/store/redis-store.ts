import { groupBySlot } from './cluster-slots';
import { probeServers } from './health-probe';
import type { ServerProbe } from './health-probe';
import { forceUnlockKey, inspectLock } from './inspect';
import type { LockInfo } from './inspect';
import { semPermitsKey } from './lock-keys';
import type { MutexKeys, RwKeys, SemKeys } from './lock-keys';
import type { RedisClient } from './redis-client';
import type { ReplicaAck } from './replica-ack';
import { SCRIPTS } from '../scripts/lua-script';
import { WriteCoalescer } from './write-coalescer';
import type { LeaseKind, LockStore, RenewItem, StoreAcquire, StoreRwAcquire, StoreSemAcquire } from './lock-store';

/** How often an acquisition is retried when too few replicas acknowledged it (replicaAck). */
const ACK_ATTEMPTS = 3;

/** Most keys one renewal script receives, so one call never blocks Redis for long. */
export const RENEW_BATCH = 500;

const KIND_CODE: Record<LeaseKind, string> = { mutex: 'm', read: 'r', write: 'w', permit: 's' };

export class RedisLockStore implements LockStore {
  /** Cluster: releases use sharded pub/sub, and renewals are batched per slot. */
  private readonly publishCommand: 'publish' | 'spublish';
  readonly readWrite = true;
  readonly semaphores = true;
  private readonly writes: WriteCoalescer;

  constructor(
    readonly client: RedisClient,
    private readonly instanceId: string,
    private readonly ack?: ReplicaAck,
  ) {
    this.publishCommand = client.isCluster ? 'spublish' : 'publish';
    this.writes = new WriteCoalescer(client);
  }

  /**
   * The queue hands a lock over inside the releaser's script, with no WAIT by
   * the new holder; under replicaAck every grant must be acknowledged, so the
   * queue (fair mode, starvation mode) is off.
   */
  get fairQueue(): boolean {
    return this.ack === undefined;
  }

  async acquire(req: StoreAcquire): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      this.writes.hold();
      // A plain attempt sends two keys and three arguments: the fewer bytes and Lua table
      // entries per call, the cheaper the uncontended cycle on both sides.
      const fence = Number(
        req.fair
          ? await SCRIPTS.acquire.run(this.client, req.keys.acquireKeys, [
              req.token,
              req.leaseMs,
              this.instanceId,
              req.waited ? 'w' : '',
              req.waiterId,
              req.waiterTtlMs,
              req.grantMs,
            ])
          : await SCRIPTS.acquire.run(
              this.client,
              req.keys.plainAcquireKeys,
              req.waited ? [req.token, req.leaseMs, this.instanceId, 'w'] : [req.token, req.leaseMs, this.instanceId],
            ),
      );
      if (fence < 0 || !this.ack) return fence;
      const short = await this.ack.check([req.keys.lock]);
      if (!short) return fence;
      // Too few replicas have it: a failover now could lose it. Give it back, and try again.
      await this.release(req.keys, req.token);
      if (attempt >= ACK_ATTEMPTS) throw short;
    }
  }

  async release(keys: MutexKeys, token: string): Promise<boolean> {
    this.writes.hold();
    const reply = await SCRIPTS.release.run(this.client, keys.releaseKeys, [token, this.publishCommand]);
    return Number(reply) === 1;
  }

  /** Records the fencing token a quorum granted on this node (see fence-raise.lua). */
  async raiseFence(keys: MutexKeys, token: string, fencingToken: number): Promise<boolean> {
    this.writes.hold();
    const reply = await SCRIPTS.fenceRaise.run(this.client, [keys.lock, keys.fence], [token, fencingToken]);
    return Number(reply) === 1;
  }

  clockDriftMs(): number {
    return 0;
  }

  inspect(prefix: string, key: string): Promise<LockInfo> {
    return inspectLock(this.client, prefix, key);
  }

  forceUnlock(prefix: string, key: string): Promise<boolean> {
    return forceUnlockKey(this.client, prefix, key);
  }

  probe(timeoutMs: number): Promise<ServerProbe> {
    return probeServers([this.client], timeoutMs);
  }

  async rwAcquire(req: StoreRwAcquire): Promise<number> {
    const read = req.mode === 'read';
    this.writes.hold();
    const reply = await SCRIPTS.rwAcquire.run(this.client, req.keys.acquireKeys, [
      req.token,
      req.leaseMs,
      this.instanceId,
      read ? 'r' : 'w',
      read ? req.heldWriteToken : req.placeTtlMs,
      req.writerPreference ? '1' : '0',
    ]);
    return Number(reply);
  }

  async rwRelease(keys: RwKeys, token: string, mode: 'read' | 'write'): Promise<boolean> {
    this.writes.hold();
    const reply = await SCRIPTS.rwRelease.run(this.client, keys.releaseKeys, [
      token,
      mode === 'read' ? 'r' : 'w',
      this.publishCommand,
    ]);
    return Number(reply) === 1;
  }

  async semAcquire(req: StoreSemAcquire): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      this.writes.hold();
      const fence = Number(
        await SCRIPTS.semAcquire.run(this.client, req.keys.acquireKeys, [
          req.token,
          req.leaseMs,
          this.instanceId,
          req.permits,
          req.initialLimit,
        ]),
      );
      if (fence < 0 || !this.ack) return fence;
      const short = await this.ack.check([req.keys.lock]);
      if (!short) return fence;
      await this.semRelease(req.keys, req.token);
      if (attempt >= ACK_ATTEMPTS) throw short;
    }
  }

  async semRelease(keys: SemKeys, token: string): Promise<boolean> {
    this.writes.hold();
    const reply = await SCRIPTS.semRelease.run(this.client, keys.releaseKeys, [token, this.publishCommand]);
    return Number(reply) === 1;
  }

  async semLimit(keys: SemKeys, limit: number): Promise<number> {
    this.writes.hold();
    const reply = await SCRIPTS.semLimit.run(this.client, keys.limitKeys, [limit, this.publishCommand]);
    if (this.ack) {
      const short = await this.ack.check([keys.limit]);
      if (short) throw short;
    }
    return Number(reply);
  }

  async renew(items: readonly RenewItem[]): Promise<boolean[]> {
    const results = await this.renewOnServer(items);
    if (this.ack && items.length > 0) {
      // A renewal a failover loses would shorten the lease behind the holder's back.
      const short = await this.ack.check(items.map((item) => item.lockKey));
      if (short) throw short;
    }
    return results;
  }

  private async renewOnServer(items: readonly RenewItem[]): Promise<boolean[]> {
    if (!this.client.isCluster) return this.renewBatches(items);
    // On Cluster one script may only declare keys of one slot: one batch per slot, all in flight at once.
    const indexed = items.map((item, index) => ({ item, index }));
    const results: boolean[] = new Array<boolean>(items.length);
    await Promise.all(
      groupBySlot(indexed, (x) => x.item.lockKey).map(async (group) => {
        const done = await this.renewBatches(group.map((x) => x.item));
        group.forEach((x, i) => (results[x.index] = done[i]));
      }),
    );
    return results;
  }

  private async renewBatches(items: readonly RenewItem[]): Promise<boolean[]> {
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < items.length; i += RENEW_BATCH) {
      const batch = items.slice(i, i + RENEW_BATCH);
      const packed = batch.map((item) => `${KIND_CODE[item.kind]}${item.leaseMs}:${item.token}`).join(' ');
      this.writes.hold();
      calls.push(
        SCRIPTS.renew.run(
          this.client,
          // A semaphore holder's permits hash keeps pace with its holders zset (see renew.lua).
          batch.flatMap((item) =>
            item.kind === 'permit' ? [item.lockKey, semPermitsKey(item.lockKey)] : [item.lockKey],
          ),
          [packed],
        ),
      );
    }
    const replies = await Promise.all(calls);
    return replies.flatMap((reply) => (reply as number[]).map((n) => Number(n) === 1));
  }
}
