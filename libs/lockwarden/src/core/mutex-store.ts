import type { MutexKeys } from './lock-keys';
import type { RedisClient } from './redis-client';
import { SCRIPTS } from './scripts/lua-script';

/** One lease to renew in a batch. */
export interface RenewItem {
  readonly lockKey: string;
  readonly token: string;
  readonly leaseMs: number;
}

export interface StoreAcquire {
  readonly keys: MutexKeys;
  readonly token: string;
  readonly leaseMs: number;
  readonly fair: boolean;
  /** Public id a fair waiter is told about its grant by; never the secret token. */
  readonly waiterId: string;
  /** How long a fair waiter keeps its place without checking back. */
  readonly waiterTtlMs: number;
}

/**
 * The lock operations one topology offers. Each call is one script, so each
 * is atomic on the server and costs one round trip.
 */
export interface LockStore {
  /** The fencing token (> 0) when the lock is ours, else -(ms worth waiting). */
  acquire(req: StoreAcquire): Promise<number>;
  /** True when it released our hold; false when the lock was not ours (any queue place is dropped too). */
  release(keys: MutexKeys, token: string): Promise<boolean>;
  /** One result per item, in order: whether the lease was still ours and is now renewed. */
  renew(items: readonly RenewItem[]): Promise<boolean[]>;
}

/** Most keys one renewal script receives, so one call never blocks Redis for long. */
export const RENEW_BATCH = 500;

export class RedisLockStore implements LockStore {
  constructor(
    private readonly client: RedisClient,
    private readonly instanceId: string,
    private readonly publishCommand: 'publish' | 'spublish' = 'publish',
  ) {}

  async acquire(req: StoreAcquire): Promise<number> {
    const reply = await SCRIPTS.acquire.run(this.client, req.keys.acquireKeys, [
      req.token,
      req.leaseMs,
      this.instanceId,
      req.fair ? '1' : '0',
      req.waiterId,
      req.waiterTtlMs,
    ]);
    return Number(reply);
  }

  async release(keys: MutexKeys, token: string): Promise<boolean> {
    const reply = await SCRIPTS.release.run(this.client, keys.releaseKeys, [token, this.publishCommand]);
    return Number(reply) === 1;
  }

  async renew(items: readonly RenewItem[]): Promise<boolean[]> {
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < items.length; i += RENEW_BATCH) {
      const batch = items.slice(i, i + RENEW_BATCH);
      const args: (string | number)[] = [];
      for (const item of batch) args.push(item.token, item.leaseMs);
      calls.push(
        SCRIPTS.renew.run(
          this.client,
          batch.map((item) => item.lockKey),
          args,
        ),
      );
    }
    const replies = await Promise.all(calls);
    return replies.flatMap((reply) => (reply as number[]).map((n) => Number(n) === 1));
  }
}
