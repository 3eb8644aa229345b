import type { MutexKeys } from '../backend/lock-keys';
import type { RedisClient } from '../backend/lock-backend';
import { SCRIPTS } from './lua-script';
import type { WriteCoalescer } from './write-coalescer';

/** How long a fencing counter lives from the seed that created it (see next-fence.lua). */
const COUNTER_LIFE_MS = 60_000;

/** Every seeded counter is a time in µs, far above this; a smaller INCR reply was never seeded. */
const SEEDED = 1e12;

/**
 * An uncontended mutex grant without a script, for a single server: two plain commands in
 * one write, `SET lock NX PX` and `INCR counter`, on a name whose counter exists (the store
 * sends names it has not granted lately to a script: see KnownCounters). Redis spends a
 * quarter of what acquire.lua costs on them (a script call's own overhead is most of that
 * script's cost: see BENCHMARKS.md).
 *
 * They are not atomic, and need not be: the INCR runs before this caller learns it holds the
 * lock, so before its release, so before the next holder's INCR. Tokens rise across holders.
 * An attempt that finds the lock busy counts too; tokens then skip a number, which fencing
 * allows. The lock's value carries no token ("owner||instance"): the counter has it.
 *
 * It never seeds a counter: a seed comes from the server's clock only (fence-seed.lua), so
 * that no token is ahead of it and a restart or failover, which seeds again from that
 * clock, still hands out higher tokens.
 *
 * Returns the fencing token, or undefined when the lock is busy: the acquire loop then tries
 * again with acquire.lua, which marks the lock waited for and says how long to wait.
 */
export async function fastGrant(
  client: RedisClient,
  writes: WriteCoalescer,
  keys: MutexKeys,
  owner: string,
  leaseMs: number,
  instanceId: string,
): Promise<number | undefined> {
  writes.cork();
  const took = client.set(keys.lock, `${owner}||${instanceId}`, 'PX', leaseMs, 'NX');
  writes.cork();
  const counted = client.incr(keys.fence);
  const [reply, fence] = await Promise.all([took, counted]);
  if (fence < SEEDED) {
    // No counter was there (it lapsed, or Redis restarted): the INCR made one from 0, with
    // no TTL. The holder seeds it from the server clock; a busy attempt only gives it its TTL.
    writes.cork();
    if (reply !== 'OK') {
      void client.pexpire(keys.fence, COUNTER_LIFE_MS, 'NX').catch(() => undefined);
      return undefined;
    }
    const token = Number(await SCRIPTS.fenceSeed.run(client, [keys.lock, keys.fence], [owner]));
    return token > 0 ? token : undefined;
  }
  return reply === 'OK' ? fence : undefined;
}
