import type { MutexKeys } from '../backend/lock-keys';
import type { RedisClient } from '../backend/lock-backend';
import { SCRIPTS } from './lua-script';
import type { WriteCoalescer } from './write-coalescer';

/** How long a fencing counter lives from the seed that created it (see next-fence.lua). */
const COUNTER_LIFE_MS = 60_000;

/** Every seeded counter is a time in µs, far above this; a smaller INCR reply was never seeded. */
const SEEDED = 1e12;

/**
 * An uncontended mutex grant without a script, for a single server: three plain commands in
 * one write, `SET lock NX PX`, `SET counter <server µs> NX PX 60000` and `INCR counter`.
 * Redis spends a quarter of what acquire.lua costs on them (a script call's own overhead is
 * most of that script's cost: see BENCHMARKS.md).
 *
 * They are not atomic, and need not be: the INCR runs before this caller learns it holds the
 * lock, so before its release, so before the next holder's INCR. Tokens rise across holders.
 * An attempt that finds the lock busy counts too; tokens then skip a number, which fencing
 * allows. The lock's value carries no token ("owner||instance"): the counter has it.
 *
 * `seed`: the server's time in µs as this process estimates it (server-clock.ts), which a
 * counter that does not exist yet starts from.
 *
 * Returns the fencing token, or undefined when the lock is busy: the acquire loop then tries
 * again with acquire.lua, which marks the lock waited for and says how long to wait.
 */
export async function fastGrant(
  client: RedisClient,
  writes: WriteCoalescer,
  seed: string,
  keys: MutexKeys,
  owner: string,
  leaseMs: number,
  instanceId: string,
): Promise<number | undefined> {
  writes.cork();
  const took = client.set(keys.lock, `${owner}||${instanceId}`, 'PX', leaseMs, 'NX');
  writes.cork();
  const seeded = client.set(keys.fence, seed, 'PX', COUNTER_LIFE_MS, 'NX');
  writes.cork();
  const counted = client.incr(keys.fence);
  const [reply, , fence] = await Promise.all([took, seeded, counted]);
  if (reply !== 'OK') return undefined;
  if (fence >= SEEDED) return fence;
  // The counter lapsed between the two writes (or an older version left it unseeded): take
  // the token from the server clock, so it still rises, and give the counter its TTL back.
  writes.cork();
  const token = Number(await SCRIPTS.fenceSeed.run(client, [keys.lock, keys.fence], [owner]));
  return token > 0 ? token : undefined;
}
