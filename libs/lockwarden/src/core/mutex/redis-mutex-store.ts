import type { LockInfo } from '../backend/lock-info';
import type { MutexKeys } from '../backend/lock-keys';
import { BUSY_FOR_UNKNOWN, UNMINTED } from '../backend/lock-store';
import type { LockStore, StoreAcquire } from '../backend/lock-store';
import type { RedisConnection } from '../redis/connection';
import { SCRIPTS } from '../redis/lua-script';
import type { LuaScript } from '../redis/lua-script';
import { NativeCommands } from '../redis/native-commands';
import type { ReplicaAck } from '../redis/replica-ack';
import { ACK_ATTEMPTS, acknowledged } from '../redis/store-context';
import type { StoreContext } from '../redis/store-context';
import { HeldReleases } from './held-releases';
import { forceUnlockKey, inspectLock } from './redis-inspect';

/**
 * The mutex's part of the Redis lock store: grants (a plain `SET NX PX` when uncontended, else
 * acquire.lua), fencing tokens, releases, and inspecting or force-unlocking a lock name. The
 * store of a topology (stores/redis-store.ts) is this, with the other features' parts beside it.
 */
export class RedisMutexStore implements StoreContext {
  /** Cluster: releases use sharded pub/sub. */
  readonly publishCommand: 'publish' | 'spublish';
  /** The releases of the leases this process holds. */
  private readonly held: HeldReleases;
  /** Handed straight to the held releases: no frame of this store's on the way out. */
  readonly releaseHeld: LockStore['releaseHeld'];

  constructor(
    readonly client: RedisConnection,
    readonly instanceId: string,
    readonly ack: ReplicaAck | undefined,
    /**
     * Whether an uncontended first attempt may be a plain `SET NX PX` whose token is minted on
     * first read. Off for a quorum's nodes, whose grant must carry each node's token.
     */
    private readonly plainGrants: boolean,
  ) {
    this.publishCommand = client.cluster ? 'spublish' : 'publish';
    // The server's own compare-and-delete only where an uncontended grant is a plain SET (not a quorum's nodes).
    const native = plainGrants ? new NativeCommands(client) : undefined;
    this.held = new HeldReleases(client, instanceId, this.publishCommand, native);
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
    return acknowledged(
      this.ack,
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

  /** Every script call of the store goes through here. */
  protected run(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return this.client.run(script, keys, args);
  }
}
