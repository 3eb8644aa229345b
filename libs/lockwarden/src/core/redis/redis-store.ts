import { groupBySlot } from './cluster-slots';
import { probeServers } from './health-probe';
import { forceUnlockKey, inspectLock } from './inspect';
import { inspectSemaphore } from './sem-inspect';
import type { LockInfo, SemaphoreInfo, ServerProbe } from '../backend/lock-info';
import { semPermitsKey } from '../backend/lock-keys';
import type { MutexKeys, RwKeys, SemKeys } from '../backend/lock-keys';
import type { RedisClient } from '../backend/lock-backend';
import type { ReplicaAck } from './replica-ack';
import { SCRIPTS } from './lua-script';
import type { LuaScript } from './lua-script';
import { WriteCoalescer } from './write-coalescer';
import { fastGrant } from './fast-grant';
import { TurnBatch } from './turn-batch';
import { KnownCounters } from './known-counters';
import { BUSY_FOR_UNKNOWN } from '../backend/lock-store';
import type {
  LockKind,
  LockStore,
  PermitHandOff,
  RenewItem,
  StoreAcquire,
  StoreRwAcquire,
  StoreSemAcquire,
} from '../backend/lock-store';

/** How often an acquisition is retried when too few replicas acknowledged it (replicaAck). */
const ACK_ATTEMPTS = 3;

/** Most keys one renewal script receives, so one call never blocks Redis for long. */
export const RENEW_BATCH = 500;

const KIND_CODE: Record<LockKind, string> = { mutex: 'm', read: 'r', write: 'w', permit: 's' };

export class RedisLockStore implements LockStore {
  /** Cluster: releases use sharded pub/sub, and renewals are batched per slot. */
  private readonly publishCommand: 'publish' | 'spublish';
  readonly readWrite = true;
  readonly semaphores = true;
  private readonly writes: WriteCoalescer;
  /** Single server: the first attempts and the releases of one tick go out together. */
  private readonly grants: TurnBatch<StoreAcquire, number | undefined> | undefined;
  private readonly releases: TurnBatch<{ keys: MutexKeys; token: string }, boolean> | undefined;

  constructor(
    readonly client: RedisClient,
    private readonly instanceId: string,
    private readonly ack?: ReplicaAck,
    fastGrants = false,
  ) {
    this.publishCommand = client.isCluster ? 'spublish' : 'publish';
    this.writes = new WriteCoalescer(client);
    if (fastGrants && !ack) {
      // An uncontended grant may be plain commands (fast-grant.ts): no failover sets counters back.
      const known = new KnownCounters();
      const many = (reqs: readonly StoreAcquire[]): Promise<(number | undefined)[]> => {
        const sentAt = performance.now();
        return this.grantMany(reqs).then((replies) => {
          // Only a grant gave its counter a minute; a busy attempt left the counter as it was.
          replies.forEach((token, i) => {
            if (token !== undefined) known.add(reqs[i].keys.fence, sentAt);
          });
          return replies;
        });
      };
      this.grants = new TurnBatch((req) => {
        // A name not granted lately may have no counter: a script seeds it from TIME.
        if (!known.has(req.keys.fence)) return many([req]).then((replies) => replies[0]);
        return fastGrant(client, this.writes, req.keys, req.ownerToken, req.leaseMs, instanceId);
      }, many);
      this.releases = new TurnBatch(
        ({ keys, token }) => this.releaseOne(keys, token),
        (items) => this.releaseMany(items),
      );
    }
  }

  /**
   * The queue hands a lock over inside the releaser's script, with no WAIT by
   * the new holder; under replicaAck every grant must be acknowledged, so the
   * queue (fair mode, starvation mode) is off.
   */
  /** Up to ACK_ATTEMPTS grants, each waiting for its replicas, and a give-back between. */
  get attemptMs(): number {
    return this.ack ? ACK_ATTEMPTS * this.ack.timeoutMs : 0;
  }

  get fairQueue(): boolean {
    return this.ack === undefined;
  }

  async acquire(req: StoreAcquire): Promise<number> {
    // A first plain attempt is most likely uncontended: try it without a script. When it finds
    // the lock busy, the acquire loop tries again with acquire.lua, which marks the lock waited
    // for. Sending that script from here instead would put a second grant on the wire after
    // any withdrawal the loop sent meanwhile (an abort): an attempt must be one call.
    if (this.grants && !req.fair && !req.waited) {
      return (await this.grants.push(req)) ?? BUSY_FOR_UNKNOWN;
    }
    const plain = [req.ownerToken, req.leaseMs, this.instanceId];
    // A plain attempt sends two keys and three arguments: the fewer bytes and Lua table
    // entries per call, the cheaper the uncontended cycle on both sides.
    const args = req.fair
      ? [...plain, req.waited ? 'w' : '', req.waiterId, req.placeMs, req.handoffMs]
      : req.waited
        ? [...plain, 'w']
        : plain;
    const keys = req.fair ? req.keys.acquireKeys : req.keys.plainAcquireKeys;
    return this.acknowledged(
      () => this.run(SCRIPTS.acquire, keys, args),
      req.keys.lock,
      () => this.release(req.keys, req.ownerToken),
    );
  }

  release(keys: MutexKeys, ownerToken: string): Promise<boolean> {
    return this.releases ? this.releases.push({ keys, token: ownerToken }) : this.releaseOne(keys, ownerToken);
  }

  private async releaseOne(keys: MutexKeys, token: string): Promise<boolean> {
    const reply = await this.run(SCRIPTS.release, keys.releaseKeys, [token, this.publishCommand]);
    return Number(reply) === 1;
  }

  /** Several first attempts in one script (grant-many.lua): each one's token, or undefined when busy. */
  private async grantMany(reqs: readonly StoreAcquire[]): Promise<(number | undefined)[]> {
    const keys = reqs.flatMap((r) => [r.keys.lock, r.keys.fence]);
    const args = reqs.flatMap((r) => [`${r.ownerToken}||${this.instanceId}`, r.leaseMs]);
    const replies = (await this.run(SCRIPTS.grantMany, keys, args)) as number[];
    return replies.map((f) => (Number(f) > 0 ? Number(f) : undefined));
  }

  /** Several releases in one script (release-many.lua), each as release.lua would do it. */
  private async releaseMany(items: readonly { keys: MutexKeys; token: string }[]): Promise<boolean[]> {
    const keys = items.flatMap((item) => item.keys.releaseKeys);
    const replies = (await this.run(SCRIPTS.releaseMany, keys, [
      this.publishCommand,
      ...items.map((item) => item.token),
    ])) as number[];
    return replies.map((r) => Number(r) === 1);
  }

  /** Records the fencing token a quorum granted on this node (see fence-raise.lua). */
  async raiseFence(keys: MutexKeys, token: string, fencingToken: number): Promise<boolean> {
    const reply = await this.run(SCRIPTS.fenceRaise, [keys.lock, keys.fence], [token, fencingToken]);
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
    const read = req.kind === 'read';
    const reply = await this.run(SCRIPTS.rwAcquire, req.keys.acquireKeys, [
      req.ownerToken,
      req.leaseMs,
      this.instanceId,
      read ? 'r' : 'w',
      read ? req.heldWriteToken : req.placeMs,
      req.writerPreference ? '1' : '0',
    ]);
    return Number(reply);
  }

  async rwRelease(keys: RwKeys, ownerToken: string, kind: 'read' | 'write'): Promise<boolean> {
    const reply = await this.run(SCRIPTS.rwRelease, keys.releaseKeys, [
      ownerToken,
      kind === 'read' ? 'r' : 'w',
      this.publishCommand,
    ]);
    return Number(reply) === 1;
  }

  semAcquire(req: StoreSemAcquire): Promise<number> {
    const args = [req.ownerToken, req.leaseMs, this.instanceId, req.permits, req.initialLimit];
    return this.acknowledged(
      () => this.run(SCRIPTS.semAcquire, req.keys.acquireKeys, args),
      req.keys.lock,
      () => this.semRelease(req.keys, req.ownerToken),
    );
  }

  async semRelease(keys: SemKeys, ownerToken: string): Promise<boolean> {
    const reply = (await this.run(SCRIPTS.semRelease, keys.releaseKeys, [ownerToken, this.publishCommand])) as number[];
    return Number(reply[0]) === 1;
  }

  get permitHandOff(): boolean {
    return !this.ack;
  }

  async semHandOff(
    keys: SemKeys,
    ownerToken: string,
    to: PermitHandOff,
  ): Promise<{ released: boolean; fencingToken: number }> {
    const reply = (await this.run(SCRIPTS.semRelease, keys.releaseKeys, [
      ownerToken,
      this.publishCommand,
      to.ownerToken,
      to.permits,
      to.leaseMs,
      this.instanceId,
    ])) as [number, number];
    return { released: Number(reply[0]) === 1, fencingToken: Number(reply[1]) };
  }

  semInspect(keys: SemKeys, key: string): Promise<SemaphoreInfo> {
    return inspectSemaphore(this.client, keys, key);
  }

  async semLimit(keys: SemKeys, limit: number): Promise<number> {
    const reply = await this.run(SCRIPTS.semLimit, keys.limitKeys, [limit, this.publishCommand]);
    if (this.ack) {
      const short = await this.ack.check([keys.limit]);
      if (short) throw short;
    }
    return Number(reply);
  }

  /** Every script call goes through here, so the write coalescer sees each one. */
  private run(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    this.writes.cork();
    return script.run(this.client, keys, args);
  }

  /**
   * A grant (a fencing token >= 0), acknowledged by enough replicas under replicaAck.
   * When too few have it, a failover now could lose it: give it back, and try again.
   */
  private async acknowledged(
    grant: () => Promise<unknown>,
    redisKey: string,
    giveBack: () => Promise<unknown>,
  ): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      const fencingToken = Number(await grant());
      if (fencingToken < 0 || !this.ack) return fencingToken;
      const short = await this.ack.check([redisKey]);
      if (!short) return fencingToken;
      await giveBack();
      if (attempt >= ACK_ATTEMPTS) throw short;
    }
  }

  async renew(items: readonly RenewItem[]): Promise<boolean[]> {
    const results = await this.renewOnServer(items);
    if (this.ack && items.length > 0) {
      // A renewal a failover loses would shorten the lease behind the holder's back.
      const short = await this.ack.check(items.map((item) => item.redisKey));
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
      groupBySlot(indexed, (x) => x.item.redisKey).map(async (group) => {
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
      const packed = batch.map((item) => `${KIND_CODE[item.kind]}${item.leaseMs}:${item.ownerToken}`).join(' ');
      calls.push(
        this.run(
          SCRIPTS.renew,
          // A semaphore holder's permits hash keeps pace with its holders zset (see renew.lua).
          batch.flatMap((item) =>
            item.kind === 'permit' ? [item.redisKey, semPermitsKey(item.redisKey)] : [item.redisKey],
          ),
          [packed],
        ),
      );
    }
    const replies = await Promise.all(calls);
    return replies.flatMap((reply) => (reply as number[]).map((n) => Number(n) === 1));
  }
}
