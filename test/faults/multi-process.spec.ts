import { LockEngine } from 'lockwarden/core';
import { workersForFile } from '../harness/child';
import type { ChildScript } from '../harness/child';
import { redisForFile, uniquePrefix } from '../harness/redis';

const server = redisForFile();
const run = workersForFile();
const worker = (env: Record<string, string>): ChildScript => run('lock-worker', { REDIS: server.redis.url, ...env });

describe('across processes', () => {
  it('three processes incrementing a non-atomic counter under the lock lose no update', async () => {
    const PREFIX = uniquePrefix('counter');
    const rounds = 40;
    const workers = [1, 2, 3].map(() => worker({ PREFIX, MODE: 'counter', ROUNDS: String(rounds), PARTIES: '3' }));
    await Promise.all(workers.map((w) => w.succeeded()));
    expect(Number(await server.admin.get(`${PREFIX}counter`))).toBe(3 * rounds);
  });

  it('fencing tokens rise strictly across processes', async () => {
    const PREFIX = uniquePrefix('fence');
    const workers = [1, 2, 3].map(() => worker({ PREFIX, MODE: 'fence', ROUNDS: '20', PARTIES: '3' }));
    await Promise.all(workers.map((w) => w.succeeded()));
    const all: number[] = [];
    for (const w of workers) {
      const mine = w.lines.filter((l) => l.startsWith('token ')).map((l) => Number(l.slice(6)));
      expect(mine).toEqual([...mine].sort((a, b) => a - b)); // each process sees its own tokens rise
      all.push(...mine);
    }
    // 60 grants, 60 tokens: none handed out twice.
    const sorted = all.sort((a, b) => a - b);
    expect(sorted).toHaveLength(60);
    expect(new Set(sorted).size).toBe(60); // no token handed out twice
  });

  it('frees the lock of a SIGKILLed holder once its lease ends', async () => {
    const PREFIX = uniquePrefix('killed');
    // Seconds of lease: the cold engine below must still find it running after the kill.
    const holder = worker({ PREFIX, MODE: 'hold', LEASE_MS: '5000' });
    const [, token] = await holder.waitFor(/^held (\d+)$/);
    holder.kill('SIGKILL');
    await holder.exited;
    const engine = new LockEngine({ redis: server.redis.url, keyPrefix: PREFIX });
    try {
      expect(await engine.tryAcquire('k')).toBeNull(); // the dead holder's lease still runs
      // The budget is the dead holder's lease plus one wait cycle: the waiter sleeps for the
      // lease's remaining TTL and retries once it has run out.
      const lock = await engine.acquire('k', { waitMs: 10_000 });
      expect(await lock.fencingToken()).toBeGreaterThan(Number(token));
      await lock.release();
    } finally {
      await engine.close();
    }
  });
});
