import { callsOf } from '../harness/command-stats';
import { engineFactory } from '../harness/engines';
import { redisForFile } from '../harness/redis';

/**
 * Many concurrent flows on one engine: the releases of one turn of the event loop go to Redis
 * as one script per batch (TurnBatch in held-releases.ts), counted by Redis itself, and flows that contend for
 * a key still exclude each other.
 */
const server = redisForFile();
const { engine: makeEngine } = engineFactory(() => server.redis.url, 'flows');

/**
 * The calls clients sent that a lock engine makes, by Redis's count: a grant's SET, and
 * scripts (the commands a script runs inside are counted under their own names, and left out).
 */
const commandCalls = (): Promise<number> => callsOf(server.admin, 'set', 'evalsha', 'eval');

describe('concurrent flows', () => {
  it('lets 64 concurrent flows of an engine share release scripts, and contended flows still exclude each other', async () => {
    const engine = makeEngine();
    await engine.withLock('warm', () => undefined);
    const before = await commandCalls();
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
    const commands = (await commandCalls()) - before;
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
  });
});
