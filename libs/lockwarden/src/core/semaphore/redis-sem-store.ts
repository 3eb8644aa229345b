import type { SemaphoreInfo } from '../backend/lock-info';
import type { SemKeys } from '../backend/lock-keys';
import type { PermitHandOff, StoreSemAcquire } from '../backend/lock-store';
import { SCRIPTS } from '../redis/lua-script';
import { acknowledged } from '../redis/store-context';
import type { StoreContext } from '../redis/store-context';
import { inspectSemaphore } from './redis-sem-inspect';

/**
 * The semaphore's part of the Redis lock store: its scripts (sem-*.lua), beside it. The store
 * of a topology (stores/redis-store.ts) holds it, and gives it the store context.
 */
export class RedisSemStore {
  constructor(private readonly ctx: StoreContext) {}

  /** Takes permits: the fencing token (>= 0) when granted, else -(ms until the earliest holder's lease ends). */
  acquire(req: StoreSemAcquire): Promise<number> {
    const { client, instanceId, ack } = this.ctx;
    const plain = [req.ownerToken, req.leaseMs, instanceId, req.permits, req.initialLimit];
    const q = req.queued;
    const args = q ? [...plain, q.waiterId, req.placeMs, req.handoffMs, q.inbox, q.seq] : plain;
    const keys = q ? req.keys.queuedAcquireKeys : req.keys.acquireKeys;
    return acknowledged(
      ack,
      () => client.run(SCRIPTS.semAcquire, keys, args),
      req.keys.lock,
      () => this.release(req.keys, req.ownerToken),
    );
  }

  /** Gives a holder's permits back (or withdraws a waiter); true when it released a live holder's. */
  async release(keys: SemKeys, ownerToken: string): Promise<boolean> {
    const reply = (await this.ctx.client.run(SCRIPTS.semRelease, keys.releaseKeys, [
      ownerToken,
      this.ctx.publishCommand,
    ])) as number[];
    return Number(reply[0]) === 1;
  }

  /** Gives permits back and hands them off to `to`, a waiter of this process, when its ask fits. */
  async handOff(
    keys: SemKeys,
    ownerToken: string,
    to: PermitHandOff,
  ): Promise<{ released: boolean; fencingToken: number }> {
    const reply = (await this.ctx.client.run(SCRIPTS.semRelease, keys.releaseKeys, [
      ownerToken,
      this.ctx.publishCommand,
      to.ownerToken,
      to.permits,
      to.leaseMs,
      this.ctx.instanceId,
    ])) as [number, number];
    return { released: Number(reply[0]) === 1, fencingToken: Number(reply[1]) };
  }

  /** Stores the limit and wakes waiters when it rose; the previous limit. */
  async setLimit(keys: SemKeys, limit: number): Promise<number> {
    const { client, ack, publishCommand } = this.ctx;
    const reply = await client.run(SCRIPTS.semLimit, keys.limitKeys, [limit, publishCommand]);
    if (ack) {
      const short = await ack.check([keys.limit]);
      if (short) throw short;
    }
    return Number(reply);
  }

  /** The stored limit and the live holders. */
  inspect(keys: SemKeys, key: string): Promise<SemaphoreInfo> {
    return inspectSemaphore(this.ctx.client, keys, key);
  }
}
