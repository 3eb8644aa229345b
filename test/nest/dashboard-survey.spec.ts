import { LockEngine } from 'lockwarden/core';
import type { LockHandle } from 'lockwarden/core';
import type { LockSurvey } from 'lockwarden/dashboard';
import { clusterForFile } from '../harness/redis-cluster';
import { callsOf } from '../harness/command-stats';
import { redisForFile, uniquePrefix } from '../harness/redis';

/** Every page of a survey, following its cursor. */
async function allPages(engine: LockEngine, limit: number): Promise<LockSurvey[]> {
  const pages = [await engine.survey({ limit })];
  while (pages.at(-1)!.cursor !== null) pages.push(await engine.survey({ limit, cursor: pages.at(-1)!.cursor! }));
  return pages;
}

describe('surveying the locks (what the dashboard reads)', () => {
  const server = redisForFile({ own: true });
  let engine: LockEngine;
  const held: LockHandle[] = [];

  beforeAll(async () => {
    engine = new LockEngine({ redis: server.redis.url, keyPrefix: uniquePrefix('survey') });
    for (let i = 0; i < 25; i++) held.push(await engine.acquire(`page:${i}`, { leaseMs: 60_000, renew: false }));
    // Keys of other applications: the survey walks past them.
    const filler = server.admin.pipeline();
    for (let i = 0; i < 20_000; i++) filler.set(`other-app:${i}`, 'x');
    await filler.exec();
    server.atEnd(async () => {
      for (const h of held) await h.release();
      await engine.close();
    });
  });

  it('pages through every held lock with its cursor', async () => {
    const pages = await allPages(engine, 10);
    const seen = new Set(pages.flatMap((p) => p.locks.map((l) => l.key)));
    expect([...seen].sort()).toEqual(held.map((h) => h.key).sort());
    expect(pages.length).toBeGreaterThan(1);
  });

  it('walks at most its budget of keys, however big the key space', async () => {
    const before = await callsOf(server.admin, 'scan');
    const page = await engine.survey({ scanBudget: 3_000 });
    const calls = (await callsOf(server.admin, 'scan')) - before;
    expect(calls).toBeLessThanOrEqual(30);
    expect(page.scanned).toBeLessThanOrEqual(3_000);
    expect(page.keys).toBeGreaterThan(20_000);
    expect(page.cursor).not.toBeNull();
  });
});

describe('surveying on Redis Cluster', () => {
  const nodes = clusterForFile({ masters: 3 });
  let engine: LockEngine;

  beforeAll(() => {
    engine = new LockEngine({ redis: nodes.where(), keyPrefix: uniquePrefix('survey-cluster') });
    nodes.atEnd(() => engine.close());
  });

  it('scans every master', async () => {
    const held: LockHandle[] = [];
    for (let i = 0; i < 30; i++) held.push(await engine.acquire(`shard:${i}`, { leaseMs: 60_000, renew: false }));
    try {
      const slots = await Promise.all(held.map((h) => nodes.admin.cluster('KEYSLOT', `{${h.key}}`)));
      // The names land on more than one master, or the test would prove nothing.
      expect(new Set(slots.map((s) => Math.floor(Number(s) / 5462))).size).toBeGreaterThan(1);
      const pages = await allPages(engine, 100);
      const seen = new Set(pages.flatMap((p) => p.locks.map((l) => l.key)));
      expect([...seen].sort()).toEqual(held.map((h) => h.key).sort());
    } finally {
      for (const h of held) await h.release();
    }
  });
});
