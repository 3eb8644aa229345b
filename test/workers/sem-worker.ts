// Semaphore clients in their own process, for the multi-process test. FLOWS concurrent flows
// each take OPS permits (1 or 2 at random) of one semaphore and report entry and exit to an
// observer Redis the library never sees, where a Lua counter records the most permits inside
// at once. HOG=1 instead takes every permit, says "holding <fence>" and waits to be killed.
// UNTIL_STOP=1 keeps the flows going until the observer has a `<PREFIX>stop` key, and
// TWO_PERMIT_FLOWS=n makes the first n flows always ask 2 permits and the rest 1. LEASE_MS sets
// the lease (1 000 ms by default, so that a killed holder's permits come back soon).
//
// The test that changes the limit under load records phases in the observer: a zset of
// fencing-token floors, each with the limit every grant above that floor must respect. The
// entry script checks each entry against the phase of its token.
import { Redis } from 'ioredis';
import { lockRedis } from './connect';
import { LockEngine } from '../../libs/lockwarden/src/core';
import { workerMain } from './worker-main';

/**
 * KEYS inside counter, max gauge, entries, phases zset (member "<phase>|<limit>", score the
 * token floor), per-phase hash of entries and peak (while it was the newest phase), violations
 * list; ARGV permits, token.
 */
export const OBSERVE_ENTER = `
local n = redis.call('incrby', KEYS[1], ARGV[1])
if n > tonumber(redis.call('get', KEYS[2]) or '0') then redis.call('set', KEYS[2], n) end
redis.call('incr', KEYS[3])
local phase = redis.call('zrevrangebyscore', KEYS[4], '(' .. ARGV[2], '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
if phase[1] then
  local name = string.match(phase[1], '^(.-)|%d+$')
  redis.call('hincrby', KEYS[5], name .. ':entries', 1)
  if ARGV[1] == '2' then redis.call('hincrby', KEYS[5], name .. ':twos', 1) end
  -- Holders granted in a later phase may be inside too: the bound is the highest limit from
  -- this entry's phase on (a raise is recorded before it is made, a lowering after).
  local from = redis.call('zrangebyscore', KEYS[4], phase[2], '+inf')
  local limit = 0
  for _, later in ipairs(from) do
    limit = math.max(limit, tonumber(string.match(later, '|(%d+)$')))
  end
  -- A phase's peak counts the entries made while it was the newest phase: one granted under it
  -- but observed after a raise (its process slow in between) may see the later holders beside
  -- it, which the raised limit allows.
  if #from == 1 and n > tonumber(redis.call('hget', KEYS[5], name .. ':max') or '0') then
    redis.call('hset', KEYS[5], name .. ':max', n)
  end
  if n > limit then
    redis.call('rpush', KEYS[6], 'token ' .. ARGV[2] .. ' entered with ' .. n .. ' permits inside, limit ' .. limit)
  end
end
return n
`;

async function main(): Promise<void> {
  const { PREFIX, OBS, KEY = 'sem', PERMITS = '3', FLOWS = '3', OPS = '20', NAME = String(process.pid) } = process.env;
  const leaseMs = Number(process.env.LEASE_MS ?? 1_000);
  const engine = new LockEngine({ redis: lockRedis(), keyPrefix: PREFIX, leaseMs, waitMs: 60_000 });
  const semaphore = engine.semaphore(KEY, { limit: Number(PERMITS) });
  if (process.env.HOG === '1') {
    const permit = await semaphore.acquire({ permits: Number(PERMITS) });
    console.log(`holding ${await permit.fencingToken()}`);
    await new Promise(() => undefined);
  }
  const observer = new Redis(OBS!);
  const observed = ['inside', 'max', 'entries', 'phases', 'phase-stats', 'violations'].map((k) => `${PREFIX}${k}`);
  const untilStop = process.env.UNTIL_STOP === '1';
  let entered = 0;
  const twoPermitFlows = process.env.TWO_PERMIT_FLOWS === undefined ? undefined : Number(process.env.TWO_PERMIT_FLOWS);
  const flow = async (index: number): Promise<void> => {
    for (let i = 0; untilStop ? !(await observer.exists(`${PREFIX}stop`)) : i < Number(OPS); i++) {
      const permits = twoPermitFlows === undefined ? (Math.random() < 0.3 ? 2 : 1) : index < twoPermitFlows ? 2 : 1;
      await semaphore.withPermit(
        async (permit) => {
          await observer.eval(OBSERVE_ENTER, observed.length, ...observed, permits, await permit.fencingToken());
          await observer.ping();
          await observer.decrby(`${PREFIX}inside`, permits);
          entered++;
        },
        { permits },
      );
    }
  };
  await Promise.all(Array.from({ length: Number(FLOWS) }, (_, i) => flow(i)));
  console.log(`done ${NAME} ${entered}`);
  await observer.quit();
  await engine.close();
}

workerMain(main);
