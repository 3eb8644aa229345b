import { renewLeases } from './renewals';
import { probeServers } from './health-probe';
import { forceUnlockKey, inspectLock } from './inspect';
import { inspectSemaphore } from './sem-inspect';
import type { LockInfo, SemaphoreInfo, ServerProbe } from '../backend/lock-info';
import type { MutexKeys, RwKeys, SemKeys } from '../backend/lock-keys';
import type { RedisConnection } from './connection';
import type { ReplicaAck } from './replica-ack';
import { SCRIPTS } from './lua-script';
import type { LuaScript } from './lua-script';
import { NativeCommands } from './native-commands';
import { HeldReleases } from './held-releases';
import { BUSY_FOR_UNKNOWN, UNMINTED } from '../backend/lock-store';
import type {
  LockStore,
  PermitHandOff,
  RenewItem,
  StoreAcquire,
  StoreRwAcquire,
  StoreSemAcquire,
} from '../backend/lock-store';

/** How often an acquisition is retried when too few replicas acknowledged it (replicaAck). */
const ACK_ATTEMPTS = 3;

export class RedisLockStore implements LockStore {
  /** Cluster: releases use sharded pub/sub. */
  private readonly publishCommand: 'publish' | 'spublish';
  readonly readWrite = true;
  readonly semaphores = true;
  /** The releases of the leases this process holds. */
  private readonly held: HeldReleases;
  /** Handed straight to the held releases: no frame of this store's on the way out. */
  readonly releaseHeld: LockStore['releaseHeld'];

  constructor(
    readonly client: RedisConnection,
    private readonly instanceId: string,
    private readonly ack?: ReplicaAck,
    /**
     * Whether an uncontended first attempt may be a plain `SET NX PX` whose token is minted on
     * first read. Off for a quorum's nodes, whose grant must carry each node's token.
     */
    private readonly plainGrants = true,
  ) {
    this.publishCommand = client.cluster ? 'spublish' : 'publish';
    // The server's own compare-and-delete only where an uncontended grant is a plain SET (not a quorum's nodes).
    this.held = new HeldReleases(
      client,
      instanceId,
      this.publishCommand,
      plainGrants ? new NativeCommands(client) : undefined,
    );
    this.releaseHeld = this.held.release;
  }

  /** Up to ACK_ATTEMPTS grants, each waiting for its replicas, and a give-back between. */
  get attemptMs(): number {
    return this.ack ? ACK_ATTEMPTS * this.ack.timeoutMs : 0;
  }

  /**
   * The queue hands a lock over inside the releaser's script, with no WAIT by
   * the new holder; under replicaAck every grant must be acknowledged, so the
   * queue (fair acquires, and hand-offs to waiters) is off.
   */
  get fairQueue(): boolean {
    return this.ack === undefined;
  }

  async acquire(req: StoreAcquire): Promise<number> {
    // A first attempt is most likely uncontended: one native SET NX PX, no script and no
    // counter. Its token is minted when first read (mint). When it finds the lock busy, the
    // acquire loop tries again with acquire.lua, which marks the lock waited for. Sending that
    // script from here instead would put a second grant on the wire after any withdrawal the
    // loop sent meanwhile (an abort): an attempt must be one call.
    if (this.plainGrants && !this.ack && !req.fair && !req.waited && !req.fenced) {
      const set = await this.client.setNxPx(req.keys.lock, `${req.ownerToken}||${this.instanceId}`, req.leaseMs);
      return set ? UNMINTED : BUSY_FOR_UNKNOWN;
    }
    const plain = [req.ownerToken, req.leaseMs, this.instanceId];
    // A plain attempt sends two keys and three arguments: the fewer bytes and Lua table
    // entries per call, the cheaper the call on both sides.
    const args = req.fair
      ? [...plain, req.waited ? 'w' : '', req.waiterId, req.placeMs, req.handoffMs, req.inbox, req.seq]
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

  async mint(keys: MutexKeys, ownerToken: string): Promise<number> {
    return Number(await this.run(SCRIPTS.fenceMint, [keys.lock, keys.fence], [ownerToken]));
  }

  release(keys: MutexKeys, ownerToken: string): Promise<boolean> {
    return this.held.releaseOne(keys, ownerToken);
  }

  /** Records the fencing token a quorum granted on this node (see fence-raise.lua). */
  async raiseFence(keys: MutexKeys, ownerToken: string, fencingToken: number): Promise<boolean> {
    const reply = await this.run(SCRIPTS.fenceRaise, [keys.lock, keys.fence], [ownerToken, fencingToken]);
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
    const plain = [
      req.ownerToken,
      req.leaseMs,
      this.instanceId,
      read ? 'r' : 'w',
      read ? req.heldWriteToken : req.placeMs,
      req.writerPreference ? '1' : '0',
    ];
    const q = req.queued;
    const args = q ? [...plain, q.waiterId, req.placeMs, req.handoffMs, q.inbox, q.seq] : plain;
    const reply = await this.run(SCRIPTS.rwAcquire, q ? req.keys.queuedAcquireKeys : req.keys.acquireKeys, args);
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
    const plain = [req.ownerToken, req.leaseMs, this.instanceId, req.permits, req.initialLimit];
    const q = req.queued;
    const args = q ? [...plain, q.waiterId, req.placeMs, req.handoffMs, q.inbox, q.seq] : plain;
    const keys = q ? req.keys.queuedAcquireKeys : req.keys.acquireKeys;
    return this.acknowledged(
      () => this.run(SCRIPTS.semAcquire, keys, args),
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

  /** As for permits: a hand-off in the release script is a grant no replica acknowledged. */
  get rwQueue(): boolean {
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

  /** Every script call of the store goes through here. */
  private run(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return this.client.run(script, keys, args);
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
    const results = await renewLeases(this.client, items, (script, keys, args) => this.run(script, keys, args));
    if (this.ack && items.length > 0) {
      // A renewal a failover loses would shorten the lease behind the holder's back.
      const short = await this.ack.check(items.map((item) => item.redisKey));
      if (short) throw short;
    }
    return results;
  }
}
