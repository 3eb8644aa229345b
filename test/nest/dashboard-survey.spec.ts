import type { Redis } from 'ioredis';
import { LockEngine } from 'lockwarden';
import type { LockHandle } from 'lockwarden';
import type { LockSurvey } from 'lockwarden/dashboard';
import { RedisCluster } from '../harness/redis-cluster';
import { startRedis, uniquePrefix } from '../harness/redis';
import type { RedisTarget } from '../harness/redis';

/** How many SCAN commands the server has run so far. */
async function scanCalls(client: Redis): Promise<number> {
  const line = (await client.info('commandstats')).split('\n').find((l) => l.startsWith('cmdstat_scan:'));
  return Number(/calls=(\d+)/.exec(line ?? '')?.[1] ?? 0);
}

/** Every page of a survey, following its cursor. */
async function allPages(engine: LockEngine, limit: number): Promise<LockSurvey[]> {
  const pages = [await engine.survey({ limit })];
  while (pages.at(-1)!.cursor !== null) pages.push(await engine.survey({ limit, cursor: pages.at(-1)!.cursor! }));
  return pages;
}

describe('surveying the locks (what the dashboard reads)', () => {
  let redis: RedisTarget;
  let admin: Redis;
  let engine: LockEngine;
  const held: LockHandle[] = [];

  beforeAll(async () => {
    redis = await startRedis({ own: true });
    admin = redis.client();
    engine = new LockEngine({ redis: redis.url, keyPrefix: uniquePrefix('survey') });
    for (let i = 0; i < 25; i++) held.push(await engine.acquire(`page:${i}`, { leaseMs: 60_000, renew: false }));
    // Keys of other applications: the survey walks past them.
    const filler = admin.pipeline();
    for (let i = 0; i < 20_000; i++) filler.set(`other-app:${i}`, 'x');
    await filler.exec();
  });

  afterAll(async () => {
    for (const h of held) await h.release();
    await engine.close();
    await admin.quit();
    await redis.stop();
  });

  it('pages through every held lock with its cursor', async () => {
    const pages = await allPages(engine, 10);
    const seen = new Set(pages.flatMap((p) => p.locks.map((l) => l.key)));
    expect([...seen].sort()).toEqual(held.map((h) => h.key).sort());
    expect(pages.length).toBeGreaterThan(1);
  });

  it('walks at most its budget of keys, however big the key space', async () => {
    const before = await scanCalls(admin);
    const page = await engine.survey({ scanBudget: 3_000 });
    const calls = (await scanCalls(admin)) - before;
    expect(calls).toBeLessThanOrEqual(30);
    expect(page.scanned).toBeLessThanOrEqual(3_000);
    expect(page.keys).toBeGreaterThan(20_000);
    expect(page.cursor).not.toBeNull();
  });
});

describe('surveying on Redis Cluster', () => {
  let cluster: RedisCluster;
  let engine: LockEngine;

  beforeAll(async () => {
    cluster = await RedisCluster.start({ masters: 3 });
    engine = new LockEngine({ redis: { cluster: cluster.startupNodes }, keyPrefix: uniquePrefix('survey-cluster') });
  });

  afterAll(async () => {
    await engine.close();
    await cluster.stop();
  });

  it('scans every master', async () => {
    const held: LockHandle[] = [];
    for (let i = 0; i < 30; i++) held.push(await engine.acquire(`shard:${i}`, { leaseMs: 60_000, renew: false }));
    const admin = cluster.client();
    try {
      const slots = await Promise.all(held.map((h) => admin.cluster('KEYSLOT', `{${h.key}}`)));
      // The names land on more than one master, or the test would prove nothing.
      expect(new Set(slots.map((s) => Math.floor(Number(s) / 5462))).size).toBeGreaterThan(1);
      const pages = await allPages(engine, 100);
      const seen = new Set(pages.flatMap((p) => p.locks.map((l) => l.key)));
      expect([...seen].sort()).toEqual(held.map((h) => h.key).sort());
    } finally {
      for (const h of held) await h.release();
      await admin.quit();
    }
  });
});
