import type { RwKeys } from '../backend/lock-keys';
import type { StoreRwAcquire } from '../backend/lock-store';
import { SCRIPTS } from '../redis/lua-script';
import type { StoreContext } from '../redis/store-context';

// The read/write lock's part of the Redis lock store: rw-acquire.lua and rw-release.lua, beside it.

/** One attempt at a read or write lease: its fencing token (>= 0) when granted, else -(ms it stays busy). */
export async function rwAcquire(ctx: StoreContext, req: StoreRwAcquire): Promise<number> {
  const read = req.kind === 'read';
  const plain = [
    req.ownerToken,
    req.leaseMs,
    ctx.instanceId,
    read ? 'r' : 'w',
    read ? req.heldWriteToken : req.placeMs,
    req.writerPreference ? '1' : '0',
  ];
  const q = req.queued;
  const args = q ? [...plain, q.waiterId, req.placeMs, req.handoffMs, q.inbox, q.seq] : plain;
  const reply = await ctx.client.run(SCRIPTS.rwAcquire, q ? req.keys.queuedAcquireKeys : req.keys.acquireKeys, args);
  return Number(reply);
}

/** Releases a read or write lease, or withdraws a waiter; true when it released the caller's lease. */
export async function rwRelease(
  ctx: StoreContext,
  keys: RwKeys,
  ownerToken: string,
  kind: 'read' | 'write',
): Promise<boolean> {
  const reply = await ctx.client.run(SCRIPTS.rwRelease, keys.releaseKeys, [
    ownerToken,
    kind === 'read' ? 'r' : 'w',
    ctx.publishCommand,
  ]);
  return Number(reply) === 1;
}
