import type { RwKeys } from '../backend/lock-keys';
import type { StoreRwAcquire } from '../backend/lock-store';
import { SCRIPTS } from '../redis/lua-script';
import type { StoreContext } from '../redis/store-context';

/**
 * The read/write lock's part of the Redis lock store: rw-acquire.lua and rw-release.lua,
 * beside it. The store of a topology (stores/redis-store.ts) holds it, and gives it the
 * store context.
 */
export class RedisRwStore {
  constructor(private readonly ctx: StoreContext) {}

  /** One attempt at a read or write lease: its fencing token (>= 0) when granted, else -(ms it stays busy). */
  async acquire(req: StoreRwAcquire): Promise<number> {
    const read = req.kind === 'read';
    const plain = [
      req.ownerToken,
      req.leaseMs,
      this.ctx.instanceId,
      read ? 'r' : 'w',
      read ? req.heldWriteToken : req.placeMs,
      req.writerPreference ? '1' : '0',
    ];
    const q = req.queued;
    const args = q ? [...plain, q.waiterId, req.placeMs, req.handoffMs, q.inbox, q.seq] : plain;
    const keys = q ? req.keys.queuedAcquireKeys : req.keys.acquireKeys;
    return Number(await this.ctx.client.run(SCRIPTS.rwAcquire, keys, args));
  }

  /** Releases a read or write lease, or withdraws a waiter; true when it released the caller's lease. */
  async release(keys: RwKeys, ownerToken: string, kind: 'read' | 'write'): Promise<boolean> {
    const reply = await this.ctx.client.run(SCRIPTS.rwRelease, keys.releaseKeys, [
      ownerToken,
      kind === 'read' ? 'r' : 'w',
      this.ctx.publishCommand,
    ]);
    return Number(reply) === 1;
  }
}
