import { groupBySlot } from './cluster-slots';
import { semPermitsKey } from '../backend/lock-keys';
import type { RedisConnection } from './connection';
import type { LockKind, RenewItem } from '../backend/lock-store';
import { SCRIPTS } from './lua-script';
import type { LuaScript } from './lua-script';

/** Most keys one renewal script receives, so one call never blocks Redis for long. */
export const RENEW_BATCH = 500;

const KIND_CODE: Record<LockKind, string> = { mutex: 'm', read: 'r', write: 'w', permit: 's' };

/** How the store sends a script. */
type RunScript = (script: LuaScript, keys: readonly string[], args: readonly (string | number)[]) => Promise<unknown>;

/**
 * Renews many leases with renew.lua: one result per item, in order, whether the lease was
 * still its owner's and is now renewed. Items go in batches of at most RENEW_BATCH; on
 * Cluster, where one script may only declare keys of one slot, one batch per slot. Every
 * batch is in flight at once.
 */
export async function renewLeases(
  client: RedisConnection,
  items: readonly RenewItem[],
  run: RunScript,
): Promise<boolean[]> {
  if (!client.cluster) return renewBatches(items, run);
  const indexed = items.map((item, index) => ({ item, index }));
  const results: boolean[] = new Array<boolean>(items.length);
  await Promise.all(
    groupBySlot(indexed, (x) => x.item.redisKey).map(async (group) => {
      const done = await renewBatches(
        group.map((x) => x.item),
        run,
      );
      group.forEach((x, i) => (results[x.index] = done[i]));
    }),
  );
  return results;
}

async function renewBatches(items: readonly RenewItem[], run: RunScript): Promise<boolean[]> {
  const calls: Promise<unknown>[] = [];
  for (let i = 0; i < items.length; i += RENEW_BATCH) {
    const batch = items.slice(i, i + RENEW_BATCH);
    // One packed argument instead of three per item keeps encoding 10 000 renewals cheap.
    const packed = batch.map((item) => `${KIND_CODE[item.kind]}${item.leaseMs}:${item.ownerToken}`).join(' ');
    calls.push(
      run(
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
