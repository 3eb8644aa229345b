// Semaphore clients in their own process, for the multi-process test. FLOWS concurrent flows
// each take OPS permits (1 or 2 at random) of one semaphore and report entry and exit to an
// observer Redis the library never sees, where a Lua counter records the most permits inside
// at once. HOG=1 instead takes every permit, says "holding <fence>" and waits to be killed.
import { Redis } from 'ioredis';
import { lockRedis } from './connect';
import { LockEngine } from '../../libs/lockwarden/src/core';

/** KEYS inside counter, max gauge, entries; ARGV permits. */
export const OBSERVE_ENTER = `
local n = redis.call('incrby', KEYS[1], ARGV[1])
if n > tonumber(redis.call('get', KEYS[2]) or '0') then redis.call('set', KEYS[2], n) end
redis.call('incr', KEYS[3])
return n
`;

async function main(): Promise<void> {
  const { PREFIX, OBS, KEY = 'sem', PERMITS = '3', FLOWS = '3', OPS = '20', NAME = String(process.pid) } = process.env;
  const engine = new LockEngine({ redis: lockRedis(), keyPrefix: PREFIX, leaseMs: 1_000, waitMs: 60_000 });
  const semaphore = engine.semaphore(KEY, { permits: Number(PERMITS) });
  if (process.env.HOG === '1') {
    const permit = await semaphore.acquire({ permits: Number(PERMITS) });
    console.log(`holding ${permit.fencingToken}`);
    await new Promise(() => undefined);
  }
  const observer = new Redis(OBS!);
  const flow = async (): Promise<void> => {
    for (let i = 0; i < Number(OPS); i++) {
      const permits = Math.random() < 0.3 ? 2 : 1;
      await semaphore.withPermit(
        async () => {
          await observer.eval(OBSERVE_ENTER, 3, `${PREFIX}inside`, `${PREFIX}max`, `${PREFIX}entries`, permits);
          await observer.ping();
          await observer.decrby(`${PREFIX}inside`, permits);
        },
        { permits },
      );
    }
  };
  await Promise.all(Array.from({ length: Number(FLOWS) }, () => flow()));
  console.log(`done ${NAME} ${Number(FLOWS) * Number(OPS)}`);
  await observer.quit();
  await engine.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
