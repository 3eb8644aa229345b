import type { SemaphoreInfo } from '../backend/lock-info';
import type { SemKeys } from '../backend/lock-keys';
import type { PermitHandOff, StoreSemAcquire } from '../backend/lock-store';
import { SCRIPTS } from '../redis/lua-script';
import { acknowledged } from '../redis/store-context';
import type { StoreContext } from '../redis/store-context';
import { inspectSemaphore } from './redis-sem-inspect';

// The semaphore's part of the Redis lock store: its scripts (sem-*.lua), beside it.

/** Takes permits: the fencing token (>= 0) when granted, else -(ms until the earliest holder's lease ends). */
export function semAcquire(ctx: StoreContext, req: StoreSemAcquire): Promise<number> {
  const plain = [req.ownerToken, req.leaseMs, ctx.instanceId, req.permits, req.initialLimit];
  const q = req.queued;
  const args = q ? [...plain, q.waiterId, req.placeMs, req.handoffMs, q.inbox, q.seq] : plain;
  const keys = q ? req.keys.queuedAcquireKeys : req.keys.acquireKeys;
  return acknowledged(
    ctx.ack,
    () => ctx.client.run(SCRIPTS.semAcquire, keys, args),
    req.keys.lock,
    () => semRelease(ctx, req.keys, req.ownerToken),
  );
}

/** Gives a holder's permits back (or withdraws a waiter); true when it released a live holder's. */
export async function semRelease(ctx: StoreContext, keys: SemKeys, ownerToken: string): Promise<boolean> {
  const reply = (await ctx.client.run(SCRIPTS.semRelease, keys.releaseKeys, [
    ownerToken,
    ctx.publishCommand,
  ])) as number[];
  return Number(reply[0]) === 1;
}

/** Gives permits back and passes them to `to`, a waiter of this process, when its ask fits. */
export async function semHandOff(
  ctx: StoreContext,
  keys: SemKeys,
  ownerToken: string,
  to: PermitHandOff,
): Promise<{ released: boolean; fencingToken: number }> {
  const reply = (await ctx.client.run(SCRIPTS.semRelease, keys.releaseKeys, [
    ownerToken,
    ctx.publishCommand,
    to.ownerToken,
    to.permits,
    to.leaseMs,
    ctx.instanceId,
  ])) as [number, number];
  return { released: Number(reply[0]) === 1, fencingToken: Number(reply[1]) };
}

/** Stores the limit and wakes waiters when it rose; the previous limit. */
export async function semLimit(ctx: StoreContext, keys: SemKeys, limit: number): Promise<number> {
  const reply = await ctx.client.run(SCRIPTS.semLimit, keys.limitKeys, [limit, ctx.publishCommand]);
  if (ctx.ack) {
    const short = await ctx.ack.check([keys.limit]);
    if (short) throw short;
  }
  return Number(reply);
}

/** The stored limit and the live holders. */
export function semInspect(ctx: StoreContext, keys: SemKeys, key: string): Promise<SemaphoreInfo> {
  return inspectSemaphore(ctx.client, keys, key);
}
