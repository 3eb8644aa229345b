import type { Redis } from 'ioredis';
import { LockEngine } from 'lockwarden';
import { startRedis, uniquePrefix } from '../harness/redis';
import type { RedisTarget } from '../harness/redis';

/**
 * Many concurrent flows on one engine: the releases of one turn of the event loop go to Redis
 * as one script per batch (TurnBatch in held-releases.ts), counted by Redis itself, and flows that contend for
 * a key still exclude each other.
 */
let redis: RedisTarget;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis.stop();
});

/**
 * The calls clients sent that a lock engine makes, from INFO commandstats: a grant's SET, and
 * scripts (the commands a script runs inside are counted under their own names, and left out).
 */
async function commandCalls(client: Redis): Promise<number> {
  const info = await client.info('commandstats');
  let total = 0;
  for (const m of info.matchAll(/^cmdstat_(set|evalsha|eval):calls=(\d+)/gm)) total += Number(m[2]);
  return total;
}

describe('concurrent flows', () => {
  it('lets 64 concurrent flows of an engine share release scripts, and contended flows still exclude each other', async () => {
    const engine = new LockEngine({ redis: redis.url, keyPrefix: uniquePrefix('flows') });
    const admin = redis.client();
    try {
      await engine.withLock('warm', () => undefined);
      const before = await commandCalls(admin);
      // 64 flows on keys of their own: the bench's uncontended scenario.
      await Promise.all(
        Array.from({ length: 64 }, async (_, flow) => {
          for (let i = 0; i < 20; i++) await engine.withLock(`own:${flow}`, () => undefined);
        }),
      );
      // Each grant is its own SET; the releases of one turn of the event loop go as one script
      // per batch (TurnBatch in held-releases.ts): fewer commands than lock operations (an acquire and a
      // release each), as Redis counts them.
      const operations = 64 * 20 * 2;
      const commands = (await commandCalls(admin)) - before;
      expect(commands).toBeLessThan(operations * 0.75);
      expect(commands).toBeGreaterThanOrEqual(64 * 20); // one SET per grant, at least
      let entered = 0;
      const holders = new Map<string, number>();
      const overlaps: string[] = [];
      await Promise.all(
        Array.from({ length: 64 }, async (_, flow) => {
          const key = `flow:${flow % 8}`; // eight flows per key: they contend, and wait by pub/sub
          for (let i = 0; i < 20; i++) {
            await engine.withLock(key, async () => {
              holders.set(key, (holders.get(key) ?? 0) + 1);
              if (holders.get(key) !== 1) overlaps.push(key);
              await new Promise((done) => setImmediate(done));
              holders.set(key, holders.get(key)! - 1);
              entered++;
            });
          }
        }),
      );
      expect(overlaps).toEqual([]);
      expect(entered).toBe(64 * 20);
    } finally {
      admin.disconnect();
      await engine.close();
    }
  });
});
