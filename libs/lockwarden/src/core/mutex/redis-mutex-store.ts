import type { MutexKeys } from '../backend/lock-keys';
import { BUSY_FOR_UNKNOWN, UNMINTED } from '../backend/lock-store';
import type { LockStore, MutexHandOff, StoreAcquire } from '../backend/lock-store';
import { SCRIPTS } from '../redis/lua-script';
import { NativeCommands } from '../redis/native-commands';
import { acknowledged } from '../redis/store-context';
import type { StoreContext } from '../redis/store-context';
import { HeldReleases } from './held-releases';

/**
 * The mutex's part of the Redis lock store: grants (a plain `SET NX PX` when uncontended, else
 * acquire.lua), fencing tokens and releases. The store of a topology (stores/redis-store.ts)
 * holds it beside the other features' parts, and gives it the store context.
 */
export class RedisMutexStore {
  /** The releases of the leases this process holds. */
  private readonly held: HeldReleases;
  /** Handed straight to the held releases: no frame of a store's on the way out. */
  readonly releaseHeld: LockStore['releaseHeld'];

  constructor(
    private readonly ctx: StoreContext,
    /**
     * Whether an uncontended first attempt may be a plain `SET NX PX` whose token is minted on
     * first read. Off for a quorum's nodes, whose grant must carry each node's token.
     */
    private readonly plainGrants: boolean,
  ) {
    // The server's own compare-and-delete only where an uncontended grant is a plain SET (not a quorum's nodes).
    const native = plainGrants ? new NativeCommands(ctx.client) : undefined;
    this.held = new HeldReleases(ctx, native);
    this.releaseHeld = this.held.release;
  }

  async acquire(req: StoreAcquire): Promise<number> {
    const { client, instanceId, ack } = this.ctx;
    // A first attempt is most likely uncontended: one native SET NX PX, no script and no
    // counter. Its token is minted when first read (mint). When it finds the lock busy, the
    // acquire loop tries again with acquire.lua, which marks the lock waited for. Sending that
    // script from here instead would put a second grant on the wire after any withdrawal the
    // loop sent meanwhile (an abort): an attempt must be one call.
    if (this.plainGrants && !ack && !req.fair && !req.waited && !req.fenced) {
      const set = await client.setNxPx(req.keys.lock, `${req.ownerToken}||${instanceId}`, req.leaseMs);
      return set ? UNMINTED : BUSY_FOR_UNKNOWN;
    }
    const plain = [req.ownerToken, req.leaseMs, instanceId];
    // A plain attempt sends two keys and three arguments: the fewer bytes and Lua table
    // entries per call, the cheaper the call on both sides.
    const args = req.fair
      ? [...plain, req.waited ? 'w' : '', req.waiterId, req.placeMs, req.handoffMs, req.inbox, req.seq]
      : req.waited
        ? [...plain, 'w']
        : plain;
    const keys = req.fair ? req.keys.acquireKeys : req.keys.plainAcquireKeys;
    return acknowledged(
      ack,
      () => client.run(SCRIPTS.acquire, keys, args),
      req.keys.lock,
      () => this.release(req.keys, req.ownerToken),
    );
  }

  async mint(keys: MutexKeys, ownerToken: string): Promise<number> {
    return Number(await this.ctx.client.run(SCRIPTS.fenceMint, [keys.lock, keys.fence], [ownerToken]));
  }

  release(keys: MutexKeys, ownerToken: string): Promise<boolean> {
    return this.held.releaseOne(keys, ownerToken);
  }

  /** hand-off-here.lua: the lock goes from `ownerToken` to `to`, a waiter of this process. */
  async handOffHere(
    keys: MutexKeys,
    ownerToken: string,
    to: MutexHandOff,
    placed: boolean,
    runOver: boolean,
  ): Promise<number> {
    const { instanceId, publishCommand } = this.ctx;
    const [fenced, place, over] = [to.fenced ? '1' : '', placed ? '1' : '', runOver ? '1' : ''];
    const args = [ownerToken, to.ownerToken, to.leaseMs, instanceId, fenced, place, over, publishCommand];
    return Number(await this.ctx.client.run(SCRIPTS.handOffHere, keys.releaseKeys, args));
  }

  /** Records the fencing token a quorum granted on this node (see fence-raise.lua). */
  async raiseFence(keys: MutexKeys, ownerToken: string, fencingToken: number): Promise<boolean> {
    const reply = await this.ctx.client.run(SCRIPTS.fenceRaise, [keys.lock, keys.fence], [ownerToken, fencingToken]);
    return Number(reply) === 1;
  }
}
