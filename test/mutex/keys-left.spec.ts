// No key outlives its use: after thousands of lock names of every kind were taken and
// released, every key left in Redis expires within a minute, except each semaphore's stored
// limit (one key per semaphore name, kept on purpose so a restart keeps the limit).
import { LockEngine } from 'lockwarden/core';
import { redisForFile, uniquePrefix } from '../harness/redis';

const server = redisForFile();

async function keysOf(prefix: string): Promise<Map<string, number>> {
  const keys = new Map<string, number>();
  for await (const batch of server.admin.scanStream({ match: `${prefix}*`, count: 1000 })) {
    for (const key of batch as string[]) keys.set(key, await server.admin.pttl(key));
  }
  return keys;
}

it('leaves nothing without a TTL of a minute or less, per 1 000 names of each kind, but the semaphore limits', async () => {
  const keyPrefix = uniquePrefix('keys-left');
  const engine = new LockEngine({ redis: server.redis.url, keyPrefix });
  const other = new LockEngine({ redis: server.redis.url, keyPrefix });
  const N = 1_000;
  const names = (kind: string): string[] => Array.from({ length: N }, (_, i) => `${kind}:${i}`);
  const each = async (kind: string, fn: (name: string) => Promise<unknown>): Promise<void> => {
    const all = names(kind);
    for (let i = 0; i < all.length; i += 100) await Promise.all(all.slice(i, i + 100).map(fn));
  };
  try {
    await each('mutex', async (k) => (await engine.acquire(k)).release());
    await each('fair', async (k) => (await engine.acquire(k, { fair: true })).release());
    await each('read', async (k) => (await engine.acquireRead(k)).release());
    await each('write', async (k) => (await engine.acquireWrite(k)).release());
    await each('sem', async (k) => (await engine.semaphore(k, { limit: 2 }).acquire()).release());
    // Contended: a fair waiter queued behind a holder, and a waiter that gave up.
    await each('queued', async (k) => {
      const held = await engine.acquire(k);
      const waiting = other.acquire(k, { fair: true, waitMs: 30_000 });
      const gaveUp = other.acquire(k, { fair: true, waitMs: 5 }).catch(() => undefined);
      await gaveUp;
      await held.release();
      await (await waiting).release();
    });
    // The same for read/write locks: a reader and a writer queued behind a writer, and a writer that gave up.
    await each('rw-queued', async (k) => {
      const held = await engine.acquireWrite(k);
      // Each releases as soon as it has the lock: which of the two queued first is the race of
      // their subscriptions, and the one granted first must not wait for the other.
      const reading = other.acquireRead(k, { waitMs: 30_000 }).then((h) => h.release());
      const writing = other.acquireWrite(k, { waitMs: 30_000 }).then((h) => h.release());
      await other.acquireWrite(k, { waitMs: 5 }).catch(() => undefined);
      await held.release();
      await Promise.all([reading, writing]);
    });

    const keys = await keysOf(keyPrefix);
    const forever = [...keys].filter(([key, ttl]) => ttl < 0 && !key.endsWith(':sem:limit'));
    expect(forever).toEqual([]);
    for (const [key, ttl] of keys) if (!key.endsWith(':sem:limit')) expect([key, ttl <= 60_000]).toEqual([key, true]);
    const limits = [...keys.keys()].filter((k) => k.endsWith(':sem:limit'));
    expect(limits).toHaveLength(N);
  } finally {
    await Promise.all([engine.close(), other.close()]);
  }
});
