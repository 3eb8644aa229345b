import type { Redis } from 'ioredis';
import { WIRE } from '../../libs/lockwarden/src/core/backend/wire';
import { lua } from '../harness/lua';
import { redisForFile, uniquePrefix } from '../harness/redis';

// The semaphore scripts run as Lua: the script's text goes to EVAL with raw KEYS and ARGV, against a
// real Redis, and each test checks the reply and the raw state the script leaves behind.

const server = redisForFile({ own: true });
const SEM_ACQUIRE = lua('sem-acquire');
const SEM_RELEASE = lua('sem-release');
const SEM_LIMIT = lua('sem-limit');
const RENEW = lua('renew');

let sub: Redis;
const heard = new Map<string, string[]>();
const ends = new Map<string, () => void>();
const END = '__end__';

interface SKeys {
  holders: string;
  permits: string;
  limit: string;
  fence: string;
  queue: string;
  waiters: string;
  channel: string;
}

/** The names lock-keys.ts gives one semaphore, all under one {hash tag}. */
function fresh(test: string, name = 'k'): SKeys {
  const base = `${uniquePrefix(`sem-lua-${test}`)}{${name}}:sem`;
  return {
    holders: `${base}:holders`,
    permits: `${base}:permits`,
    limit: `${base}:limit`,
    fence: `${base}:fence`,
    queue: `${base}:queue`,
    waiters: `${base}:waiters`,
    channel: `${base}:released`,
  };
}

/** The inbox every queued waiter of these tests names: a hand-off is published on `<channel>:ib`. */
const INBOX = 'ib';

/**
 * sem-acquire.lua, queued: KEYS holders, permits, limit, fence, queue, waiters; ARGV token,
 * lease, instance, permits, initial limit, waiter id, place ttl, hand-off lease, inbox, attempt number.
 */
async function acquireQueued(
  s: SKeys,
  token: string,
  permits = 1,
  limit = 3,
  a: { place?: number; handoff?: number; seq?: number } = {},
): Promise<number> {
  return Number(
    await run(
      SEM_ACQUIRE,
      [s.holders, s.permits, s.limit, s.fence, s.queue, s.waiters],
      [
        token,
        30_000,
        `i-${token}`,
        permits,
        limit,
        `w-${token}`,
        a.place ?? 60_000,
        a.handoff ?? 700,
        INBOX,
        a.seq ?? 1,
      ],
    ),
  );
}

/** sem-release.lua with the queue: KEYS holders, permits, channel, limit, fence, queue, waiters. */
async function releaseQueued(s: SKeys, token: string): Promise<number> {
  const keys = [s.holders, s.permits, s.channel, s.limit, s.fence, s.queue, s.waiters];
  return Number(((await run(SEM_RELEASE, keys, [token, 'publish'])) as number[])[0]);
}

function run(source: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
  return server.admin.eval(source, keys.length, ...keys, ...args);
}

/** sem-acquire.lua: KEYS holders, permits, limit, fence; ARGV token, lease, instance, permits, initial limit. */
async function acquire(s: SKeys, token: string, permits = 1, limit = 3, lease = 30_000): Promise<number> {
  return Number(
    await run(SEM_ACQUIRE, [s.holders, s.permits, s.limit, s.fence], [token, lease, `i-${token}`, permits, limit]),
  );
}

async function release(s: SKeys, token: string): Promise<number> {
  const reply = (await run(
    SEM_RELEASE,
    [s.holders, s.permits, s.channel, s.limit, s.fence],
    [token, 'publish'],
  )) as number[];
  return Number(reply[0]);
}

/** sem-release.lua handing off: releases `token` and grants `to` (asking `permits`) when it fits: [released, fence]. */
async function handOff(s: SKeys, token: string, to: string, permits = 1, lease = 30_000): Promise<[number, number]> {
  const reply = (await run(
    SEM_RELEASE,
    [s.holders, s.permits, s.channel, s.limit, s.fence],
    [token, 'publish', to, permits, lease, `i-${to}`],
  )) as [number, number];
  return [Number(reply[0]), Number(reply[1])];
}

async function setLimit(s: SKeys, limit: number): Promise<number> {
  return Number(await run(SEM_LIMIT, [s.limit, s.channel], [limit, 'publish']));
}

async function serverMs(): Promise<number> {
  const [seconds, micros] = await server.admin.time();
  return Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000);
}

/** Subscribes to `channel`; `messages()` then returns what was published on it until now, in order. */
async function listen(channel: string): Promise<{ messages: () => Promise<string[]> }> {
  heard.set(channel, []);
  await sub.subscribe(channel);
  return {
    messages: async () => {
      // Pub/sub keeps one connection's publishes in order: the end marker arrives after them all.
      const done = new Promise<void>((resolve) => ends.set(channel, resolve));
      await server.admin.publish(channel, END);
      await done;
      return heard.get(channel)!.splice(0);
    },
  };
}

beforeAll(async () => {
  sub = server.redis.client();
  server.atEnd(() => sub.quit());
  sub.on('message', (channel: string, message: string) => {
    if (message === END) ends.get(channel)?.();
    else heard.get(channel)?.push(message);
  });
});

describe('sem-acquire.lua', () => {
  it('grants while the permits fit, stores the limit on first use, seeds the fence from TIME µs and raises it per grant', async () => {
    const s = fresh('grant');
    const before = await serverMs();
    const a = await acquire(s, 'a', 2, 3);
    expect(a).toBeGreaterThan(before * 1_000 - 1);
    expect(await server.admin.get(s.limit)).toBe('3');
    const b = await acquire(s, 'b', 1, 3);
    expect(b).toBeGreaterThan(a);
    expect(await server.admin.hget(s.permits, 'a')).toBe(`2|${a}|i-a`);
    expect(await server.admin.zcard(s.holders)).toBe(2);
    expect(await server.admin.pttl(s.holders)).toBeGreaterThan(29_000);
    expect(await server.admin.pttl(s.permits)).toBeGreaterThan(29_000);
  });

  it('refuses when the sum would pass the limit, with the ms until the earliest live deadline', async () => {
    const s = fresh('busy');
    await acquire(s, 'a', 2, 3, 5_000);
    await acquire(s, 'b', 1, 3, 60_000);
    const reply = await acquire(s, 'c', 1, 3);
    expect(reply).toBeLessThan(0);
    expect(-reply).toBeLessThanOrEqual(5_000);
    expect(-reply).toBeGreaterThan(4_000);
    expect(await server.admin.hexists(s.permits, 'c')).toBe(0);
  });

  it('drops holders whose deadline passed first, and gives their permits to the caller', async () => {
    const s = fresh('expired');
    await acquire(s, 'a', 3, 3);
    // A holder that stopped renewing: its deadline is in the past by server time.
    await server.admin.zadd(s.holders, (await serverMs()) - 10, 'a');
    const fence = await acquire(s, 'b', 3, 3);
    expect(fence).toBeGreaterThan(0);
    expect(await server.admin.zscore(s.holders, 'a')).toBeNull();
    expect(await server.admin.hexists(s.permits, 'a')).toBe(0);
  });

  it('the stored limit rules over the one asked with; a retry of a landed grant returns its fence', async () => {
    const s = fresh('stored');
    await server.admin.set(s.limit, '1');
    const a = await acquire(s, 'a', 1, 5);
    expect(await acquire(s, 'a', 1, 5)).toBe(a);
    expect(await acquire(s, 'b', 1, 5)).toBeLessThan(0);
    expect(await server.admin.get(s.limit)).toBe('1');
  });

  it('keeps the sum of held permits in "#used": up on a grant, down on a release and on a lapsed holder', async () => {
    const s = fresh('used');
    const used = async (): Promise<string | null> => server.admin.hget(s.permits, '#used');
    await acquire(s, 'a', 2, 5);
    await acquire(s, 'd', 1, 5);
    expect(await used()).toBe('3');
    expect(await acquire(s, 'c', 3, 5)).toBeLessThan(0); // 3 held of 5
    await release(s, 'a');
    expect(await used()).toBe('1');
    await release(s, 'd');
    expect(await server.admin.exists(s.permits)).toBe(0); // the count went with the last holder
    await acquire(s, 'b', 1, 5, 1_000);
    await acquire(s, 'e', 1, 5, 30_000); // keeps the holders zset alive past b's lease
    const deadline = Number(await server.admin.zscore(s.holders, 'b'));
    while ((await serverMs()) <= deadline); // b's lease ends by server time
    expect(await used()).toBe('2'); // nothing swept yet
    expect(await acquire(s, 'c', 4, 5)).toBeGreaterThan(0); // b's permit came back in the sweep
    expect(await used()).toBe('5');
    expect(await server.admin.hexists(s.permits, 'b')).toBe(0);
  });

  it('rebuilds a missing count from the holders, where a holder without its record holds every permit', async () => {
    const s = fresh('norecord');
    await acquire(s, 'a', 1, 3);
    await acquire(s, 'b', 1, 3);
    await server.admin.hdel(s.permits, '#used');
    expect(await acquire(s, 'c', 2, 3)).toBeLessThan(0);
    expect(await server.admin.hget(s.permits, '#used')).toBe('2');
    await server.admin.hdel(s.permits, 'a', '#used');
    expect(await acquire(s, 'c', 1, 3)).toBeLessThan(0); // a counts as 3
  });

  it('a count or record left over with nobody holding anything neither blocks a grant nor stays behind', async () => {
    const s = fresh('stale');
    await server.admin.hset(s.permits, '#used', 3, 'gone', '1|1|i');
    expect(await acquire(s, 'a', 3, 3)).toBeGreaterThan(0);
    expect(await server.admin.hexists(s.permits, 'gone')).toBe(0);
    expect(await release(s, 'a')).toBe(1);
    await server.admin.hset(s.permits, '#used', 3, 'gone', '1|1|i');
    await server.admin.set(s.limit, '1');
    expect(await acquire(s, 'b', 2, 3, 7_000)).toBe(-7_000);
    expect(await server.admin.exists(s.permits)).toBe(0);
  });

  it("a holder's zset that expired whole leaves no record that could later take a permit off the count", async () => {
    const s = fresh('expired');
    await acquire(s, 'a', 1, 2, 30_000);
    await release(s, 'a');
    await acquire(s, 'b', 1, 2, 50);
    const deadline = Number(await server.admin.zscore(s.holders, 'b'));
    while ((await serverMs()) <= deadline + 60 && (await server.admin.exists(s.holders)) === 1);
    expect(await server.admin.exists(s.holders)).toBe(0); // the zset ran out with b's lease
    expect(await acquire(s, 'c', 2, 2)).toBeGreaterThan(0);
    expect(await release(s, 'b')).toBe(0); // b's late release takes nothing off c's count
    expect(await acquire(s, 'd', 1, 2)).toBeLessThan(0);
  });

  it('with nobody holding and the limit below the ask, waits a lease (only a raised limit helps)', async () => {
    const s = fresh('toolow');
    await server.admin.set(s.limit, '1');
    expect(await acquire(s, 'a', 2, 3, 7_000)).toBe(-7_000);
  });
});

describe('sem-release.lua handing permits off', () => {
  it('releases a holder and grants the waiter it names in one step, announcing only permits it did not take', async () => {
    const s = fresh('handoff-one');
    const l = await listen(s.channel);
    const a = await acquire(s, 'a', 2, 2);
    const [released, fence] = await handOff(s, 'a', 'w', 1);
    expect(released).toBe(1);
    expect(Number(fence)).toBeGreaterThan(a);
    expect(await server.admin.zscore(s.holders, 'a')).toBeNull();
    expect(await server.admin.hget(s.permits, 'w')).toBe(`1|${fence}|i-w`);
    expect(await server.admin.hget(s.permits, '#used')).toBe('1');
    expect(await l.messages()).toEqual([WIRE.released]); // one of a's two permits was not taken
    const [, second] = await handOff(s, 'w', 'v', 1);
    expect(second).toBeGreaterThan(Number(fence));
    expect(await l.messages()).toEqual([]);
  });

  it("grants nothing when the waiter's ask does not fit, or it holds already, or the releaser held nothing", async () => {
    const s = fresh('handoff-no');
    const l = await listen(s.channel);
    await acquire(s, 'a', 1, 3);
    await acquire(s, 'b', 1, 3);
    await setLimit(s, 1); // lowered under the holders
    expect(await handOff(s, 'a', 'w', 1)).toEqual([1, 0]);
    expect(await server.admin.zscore(s.holders, 'w')).toBeNull();
    expect(await server.admin.hget(s.permits, '#used')).toBe('1');
    expect(await l.messages()).toEqual([WIRE.released]);
    await setLimit(s, 3);
    await l.messages();
    const held = Number(String(await server.admin.hget(s.permits, 'b')).split('|')[1]);
    await acquire(s, 'c', 1, 3);
    expect(await handOff(s, 'c', 'b', 1)).toEqual([1, 0]); // b holds already: no second grant
    expect(Number(String(await server.admin.hget(s.permits, 'b')).split('|')[1])).toBe(held);
    expect(await handOff(s, 'nobody', 'w', 1)).toEqual([0, 0]);
    expect(await server.admin.zscore(s.holders, 'w')).toBeNull();
  });

  it('a caller that holds already gets its grant back from sem-acquire with the lease restarted', async () => {
    const s = fresh('handoff-held');
    await acquire(s, 'a', 1, 2);
    const [, fence] = await handOff(s, 'a', 'w', 1, 60);
    const before = Number(await server.admin.zscore(s.holders, 'w'));
    expect(await acquire(s, 'w', 1, 2, 30_000)).toBe(fence);
    expect(Number(await server.admin.zscore(s.holders, 'w'))).toBeGreaterThanOrEqual(before + 29_000);
    expect(await server.admin.hget(s.permits, '#used')).toBe('1');
  });
});

describe('sem-release.lua', () => {
  it("removes the holder and publishes one 'r' per permit; a second release returns 0 and publishes nothing", async () => {
    const s = fresh('release');
    const l = await listen(s.channel);
    await acquire(s, 'a', 2, 3);
    expect(await release(s, 'a')).toBe(1);
    expect(await server.admin.zscore(s.holders, 'a')).toBeNull();
    expect(await server.admin.hexists(s.permits, 'a')).toBe(0);
    expect(await release(s, 'a')).toBe(0);
    expect(await l.messages()).toEqual([WIRE.released, WIRE.released]);
  });

  it("a lapsed holder's release returns 0 but still wakes the waiters", async () => {
    const s = fresh('release-lapsed');
    const l = await listen(s.channel);
    await acquire(s, 'a', 1, 3);
    await server.admin.zadd(s.holders, (await serverMs()) - 10, 'a');
    expect(await release(s, 'a')).toBe(0);
    expect(await l.messages()).toEqual([WIRE.released]);
  });
});

describe('sem-release.lua and sem-acquire.lua with the queue', () => {
  it('a waiter with no room takes a place; a release hands it the permits on its inbox alone, with its lease and attempt', async () => {
    const s = fresh('q-handoff');
    const everyone = await listen(s.channel);
    const inbox = await listen(`${s.channel}:${INBOX}`);
    await acquire(s, 'a', 1, 1);
    expect(await acquireQueued(s, 'b', 1, 1, { handoff: 700, seq: 3 })).toBeLessThan(0);
    expect(await server.admin.zrange(s.queue, '0', '-1')).toEqual(['b']);
    expect(await server.admin.hget(s.waiters, 'b')).toMatch(/^\d+\|1\|700\|w-b\|ib\|3\|i-b$/);

    expect(await releaseQueued(s, 'a')).toBe(1);

    const [grant] = await inbox.messages();
    const fence = Number(grant.split(':')[1]);
    expect(grant).toBe(`gw-b:${fence}:700:3`);
    expect(await server.admin.hget(s.permits, 'b')).toBe(`1|${fence}|i-b`);
    const deadline = Number(await server.admin.zscore(s.holders, 'b'));
    expect(deadline - (await serverMs())).toBeLessThanOrEqual(700);
    expect(await server.admin.exists(s.queue, s.waiters)).toBe(0);
    expect(await everyone.messages()).toEqual([]); // every permit given back was handed off
    // Its next attempt finds it holding: the confirm of a hand-off too late to use as told.
    expect(await acquireQueued(s, 'b', 1, 1)).toBe(fence);
  });

  it('hands permits to the oldest places that fit, in order, stops at one that does not, and passes over an ask above the limit', async () => {
    const s = fresh('q-order');
    await acquire(s, 'a', 3, 3);
    for (const [token, n] of [
      ['big', 4],
      ['b', 1],
      ['c', 2],
      ['d', 1],
    ] as const) {
      expect(await acquireQueued(s, token, n, 3)).toBeLessThan(0);
    }
    expect(await releaseQueued(s, 'a')).toBe(1);
    // b (1) and c (2) fill the 3 permits; d waits behind; 'big' asks more than the limit: passed over, kept.
    expect((await server.admin.zrange(s.holders, '0', '-1')).sort()).toEqual(['b', 'c']);
    expect(await server.admin.zrange(s.queue, '0', '-1')).toEqual(['big', 'd']);
    await releaseQueued(s, 'b');
    expect((await server.admin.zrange(s.holders, '0', '-1')).sort()).toEqual(['c', 'd']);
    await releaseQueued(s, 'c');
    expect(await acquireQueued(s, 'e', 1, 3)).toBeGreaterThan(0); // room, and only 'big' ahead of it
  });

  it('a queued attempt behind a live place that fits the limit waits its turn, even with room for it', async () => {
    const s = fresh('q-turn');
    await acquire(s, 'a', 2, 3);
    expect(await acquireQueued(s, 'x', 2, 3)).toBeLessThan(0); // 2 + 2 > 3
    expect(await acquireQueued(s, 'e', 1, 3)).toBeLessThan(0); // 1 free, but x came first
    expect(await acquire(s, 'plain', 1, 3)).toBeGreaterThan(0); // a first attempt is not queued: it may barge
  });

  it('a waiter that gives up withdraws its place; lapsed places are dropped', async () => {
    const s = fresh('q-withdraw');
    await acquire(s, 'a', 1, 1);
    await acquireQueued(s, 'b', 1, 1);
    await acquireQueued(s, 'c', 1, 1);
    expect(await releaseQueued(s, 'b')).toBe(0);
    expect(await server.admin.zrange(s.queue, '0', '-1')).toEqual(['c']);
    // c's place lapsed (its deadline in the past, as its process died long ago).
    await server.admin.hset(s.waiters, 'c', '1000|1|700|w-c|ib|1|i-c');
    expect(await releaseQueued(s, 'a')).toBe(1);
    expect(await server.admin.exists(s.queue, s.waiters)).toBe(0);
    expect(await server.admin.zcard(s.holders)).toBe(0);
  });
});

describe('sem-limit.lua', () => {
  it("stores the limit, returns the previous one, and publishes 'a' only when it rose", async () => {
    const s = fresh('limit');
    const l = await listen(s.channel);
    expect(await setLimit(s, 2)).toBe(0);
    expect(await setLimit(s, 5)).toBe(2);
    expect(await setLimit(s, 1)).toBe(5);
    expect(await setLimit(s, 1)).toBe(1);
    expect(await server.admin.get(s.limit)).toBe('1');
    expect(await l.messages()).toEqual([WIRE.rwChanged, WIRE.rwChanged]);
  });

  it('lowering the limit keeps the holders, and holds back new grants until they leave', async () => {
    const s = fresh('lower');
    await acquire(s, 'a', 2, 3);
    await setLimit(s, 1);
    expect(await server.admin.zscore(s.holders, 'a')).not.toBeNull();
    expect(await acquire(s, 'b', 1, 3)).toBeLessThan(0);
    await release(s, 'a');
    expect(await acquire(s, 'b', 1, 3)).toBeGreaterThan(0);
  });
});

describe("renew.lua, kind 's'", () => {
  it('renews a live holder (deadline = now + lease, both TTLs raised), refuses lapsed and unknown ones; m items beside keep their place', async () => {
    const s = fresh('renew');
    await acquire(s, 'a', 1, 3, 1_000);
    await acquire(s, 'b', 1, 3, 1_000);
    await server.admin.zadd(s.holders, (await serverMs()) - 10, 'b');
    const mutex = `${uniquePrefix('sem-lua-renew-m')}{k}`;
    await server.admin.set(mutex, 'm1|1|i', 'PX', 1_000);
    const before = await serverMs();
    const reply = (await run(
      RENEW,
      [s.holders, s.permits, mutex, s.holders, s.permits, s.holders, s.permits],
      ['s60000:a m60000:m1 s60000:b s60000:nobody'],
    )) as number[];
    expect(reply).toEqual([1, 1, 0, 0]);
    expect(Number(await server.admin.zscore(s.holders, 'a'))).toBeGreaterThanOrEqual(before + 60_000);
    expect(await server.admin.pttl(s.holders)).toBeGreaterThan(59_000);
    expect(await server.admin.pttl(s.permits)).toBeGreaterThan(59_000);
    expect(await server.admin.pttl(mutex)).toBeGreaterThan(59_000);
    expect(await server.admin.zscore(s.holders, 'nobody')).toBeNull();
  });
});
