import { LockError } from 'lockwarden/errors';
import type { LockEngine } from 'lockwarden/core';
import type { RedisCluster } from './redis-cluster';

/**
 * Kills the master of a shard while `engine` holds a lock on it, waits for its replica to be
 * promoted, and checks what the holder and the next caller see: the holder kept its lock on
 * the promoted replica or was told it lost it (never silence), and a new lock on the same
 * shard is served. For a Cluster with a replica per master.
 */
export async function expectServedAfterFailover(replicated: RedisCluster, engine: LockEngine): Promise<void> {
  const masters = await replicated.masters();
  const victim = masters.find((m) => m.slots.length > 0)!;
  const keyPrefix = engine.options.keyPrefix;
  const [heldKey, laterKey] = [
    await replicated.keyOn(victim, keyPrefix, 'shard-1'),
    await replicated.keyOn(victim, keyPrefix, 'shard-2'),
  ];
  const held = await engine.acquire(heldKey);
  await replicated.nodes.find((n) => n.port === victim.port)!.kill();
  await replicated.waitUntilPromoted(victim.id);
  const kept = await held.extend().then(
    () => true,
    (err: unknown) => {
      expect(err).toBeInstanceOf(LockError);
      return false;
    },
  );
  expect(kept || held.signal.aborted || !held.isHeld()).toBe(true);
  const later = await engine.acquire(laterKey, { waitMs: 20_000 });
  expect(await later.fencingToken()).toBeGreaterThan(0);
  await later.release();
  await held.release().catch(() => undefined);
}
