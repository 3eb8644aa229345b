import type { Redis } from 'ioredis';
import { lua } from '../harness/lua';
import { redisForFile, uniquePrefix } from '../harness/redis';

// Every Lua script, run as Lua: the script's text goes to EVAL with raw KEYS and ARGV, against a
// real Redis, and each test checks the reply and the raw state the script leaves behind.

const server = redisForFile({ own: true });
const ACQUIRE = lua('acquire');
const RELEASE = lua('release');
const RENEW = lua('renew');
const RW_ACQUIRE = lua('rw-acquire');
const RW_RELEASE = lua('rw-release');
const INSPECT = lua('inspect');
const FORCE_UNLOCK = lua('force-unlock');
const FENCE_RAISE = lua('fence-raise');
const FENCE_MINT = lua('fence-mint');
const RELEASE_PLAIN = lua('release-plain');

let sub: Redis;

// ---- keys: the names lock-keys.ts gives one lock, all under one {hash tag} ---------------------

interface MKeys {
  lock: string;
  fence: string;
  queue: string;
  waiters: string;
  channel: string;
}
interface RwKeys {
  lock: string;
  writers: string;
  fence: string;
  queue: string;
  waiters: string;
  channel: string;
}

function mutexKeys(prefix: string, name = 'k'): MKeys {
  const lock = `${prefix}{${name}}`;
  return {
    lock,
    fence: `${lock}:fence`,
    queue: `${lock}:queue`,
    waiters: `${lock}:waiters`,
    channel: `${lock}:released`,
  };
}

function rwKeys(prefix: string, name = 'k'): RwKeys {
  const lock = `${prefix}{${name}}:rw`;
  return {
    lock,
    writers: `${lock}:writers`,
    fence: `${lock}:fence`,
    queue: `${lock}:queue`,
    waiters: `${lock}:waiters`,
    channel: `${lock}:released`,
  };
}

/** A fresh mutex and read/write lock of one name, under a prefix no other test uses. */
function fresh(test: string, name = 'k'): { m: MKeys; rw: RwKeys } {
  const prefix = uniquePrefix(`lua-${test}`);
  return { m: mutexKeys(prefix, name), rw: rwKeys(prefix, name) };
}

// ---- calling the scripts with raw KEYS and ARGV ------------------------------------------------

function run(source: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
  return server.admin.eval(source, keys.length, ...keys, ...args);
}

/** The inbox every queued waiter of these tests names: a hand-off is published on `<channel>:ib`. */
const INBOX = 'ib';

interface AcquireArgs {
  lease?: number;
  instance?: string;
  fair?: boolean;
  waiterId?: string;
  waiterTtl?: number;
  grant?: number;
  waited?: boolean;
  /** The number of this attempt (named in a hand-off). Default 1. */
  seq?: number;
}

/**
 * acquire.lua. Plain: KEYS lock, fence; ARGV token, lease, instance (, 'w' when it waited).
 * Fair: KEYS lock, fence, queue, waiters; ARGV token, lease, instance, 'w' or '', waiter id,
 * waiter ttl, grant lease, inbox (always INBOX here), attempt number.
 */
async function acquire(m: MKeys, token: string, a: AcquireArgs = {}): Promise<number> {
  const plain = [token, a.lease ?? 30_000, a.instance ?? `inst-${token}`];
  const reply = a.fair
    ? await run(
        ACQUIRE,
        [m.lock, m.fence, m.queue, m.waiters],
        [
          ...plain,
          a.waited ? 'w' : '',
          a.waiterId ?? `w-${token}`,
          a.waiterTtl ?? 60_000,
          a.grant ?? 250,
          INBOX,
          a.seq ?? 1,
        ],
      )
    : await run(ACQUIRE, [m.lock, m.fence], a.waited ? [...plain, 'w'] : plain);
  return reply as number;
}

/** release.lua: KEYS lock, fence, queue, waiters, channel; ARGV token, publish command. */
async function release(m: MKeys, token: string, publish = 'publish'): Promise<number> {
  return (await run(RELEASE, [m.lock, m.fence, m.queue, m.waiters, m.channel], [token, publish])) as number;
}

/** renew.lua: KEYS one lock key per item; ARGV[1] the packed "<kind><lease>:<token>" entries. */
async function renew(items: readonly [key: string, entry: string][]): Promise<number[]> {
  const reply = await run(
    RENEW,
    items.map(([key]) => key),
    [items.map(([, entry]) => entry).join(' ')],
  );
  return reply as number[];
}

/** A queued read/write attempt: it takes or keeps a place in the lock's queue. */
interface RwQueued {
  waiterId?: string;
  placeTtl?: number;
  /** The lease a hand-off starts with. */
  grant?: number;
  seq?: number;
}

/**
 * rw-acquire.lua. First attempt: KEYS lock, writers, fence; ARGV token, lease, instance, 'r' or
 * 'w', held write token (reads) or place ttl (writes), writer preference. Queued: KEYS also
 * queue, waiters; ARGV also waiter id, place ttl, hand-off lease, inbox (INBOX), attempt number.
 */
async function rwAcquire(rw: RwKeys, args: (string | number)[], queued: RwQueued | undefined, token: string) {
  if (!queued) return (await run(RW_ACQUIRE, [rw.lock, rw.writers, rw.fence], args)) as number;
  const extra = [
    queued.waiterId ?? `w-${token}`,
    queued.placeTtl ?? 60_000,
    queued.grant ?? 250,
    INBOX,
    queued.seq ?? 1,
  ];
  return (await run(RW_ACQUIRE, [rw.lock, rw.writers, rw.fence, rw.queue, rw.waiters], [...args, ...extra])) as number;
}

async function readLock(
  rw: RwKeys,
  token: string,
  a: { lease?: number; instance?: string; heldWrite?: string; preference?: boolean; queued?: RwQueued } = {},
): Promise<number> {
  const args = [
    token,
    a.lease ?? 30_000,
    a.instance ?? `inst-${token}`,
    'r',
    a.heldWrite ?? '',
    a.preference ? '1' : '0',
  ];
  return rwAcquire(rw, args, a.queued, token);
}

async function writeLock(
  rw: RwKeys,
  token: string,
  a: { lease?: number; instance?: string; placeTtl?: number; queued?: RwQueued } = {},
): Promise<number> {
  const args = [token, a.lease ?? 30_000, a.instance ?? `inst-${token}`, 'w', a.placeTtl ?? 1_000, '0'];
  return rwAcquire(rw, args, a.queued, token);
}

/** rw-release.lua: KEYS lock, writers, channel, fence, queue, waiters; ARGV token, 'r' | 'w', publish command. */
async function rwRelease(rw: RwKeys, token: string, mode: 'r' | 'w'): Promise<number> {
  const keys = [rw.lock, rw.writers, rw.channel, rw.fence, rw.queue, rw.waiters];
  return (await run(RW_RELEASE, keys, [token, mode, 'publish'])) as number;
}

/** inspect.lua: KEYS mutex lock, fence, queue, rw lock, writers, rw fence, rw queue. */
async function inspect(m: MKeys, rw: RwKeys): Promise<(string | number)[]> {
  const keys = [m.lock, m.fence, m.queue, rw.lock, rw.writers, rw.fence, rw.queue];
  return (await run(INSPECT, keys, [])) as (string | number)[];
}

/** force-unlock.lua: KEYS mutex lock, queue, waiters, channel, rw lock, writers, rw channel, rw queue, rw waiters. */
async function forceUnlock(m: MKeys, rw: RwKeys, publish = 'publish'): Promise<number> {
  const keys = [m.lock, m.queue, m.waiters, m.channel, rw.lock, rw.writers, rw.channel, rw.queue, rw.waiters];
  return (await run(FORCE_UNLOCK, keys, [publish])) as number;
}

/** fence-raise.lua: KEYS lock, fence; ARGV token, fencing token. */
async function fenceRaise(m: MKeys, token: string, fencingToken: string): Promise<number> {
  return (await run(FENCE_RAISE, [m.lock, m.fence], [token, fencingToken])) as number;
}

// ---- raw state -----------------------------------------------------------------------------------

/** The server clock, as the scripts read it (TIME): microseconds and whole milliseconds. */
async function clock(): Promise<{ us: number; ms: number }> {
  const [seconds, micros] = await server.admin.time();
  const us = Number(seconds) * 1_000_000 + Number(micros);
  return { us, ms: Math.floor(us / 1_000) };
}

async function zset(key: string): Promise<string[]> {
  return (await server.admin.zrange(key, '0', '-1', 'WITHSCORES')) as unknown as string[];
}

function expectWithin(value: number, low: number, high: number): void {
  expect(value).toBeGreaterThanOrEqual(low);
  expect(value).toBeLessThanOrEqual(high);
}

/** Expects a PTTL just under a fresh lease: at most `leaseMs`, and not more than a second below it. */
async function expectPttlNear(key: string, leaseMs: number): Promise<void> {
  expectWithin(await server.admin.pttl(key), leaseMs - 1_000, leaseMs);
}

/** Lets a key's TTL lapse for real: a 1 ms PEXPIRE, then wait for PTTL to say it is gone. */
async function lapse(key: string): Promise<void> {
  expect(await server.admin.pexpire(key, 1)).toBe(1);
  while ((await server.admin.pttl(key)) !== -2) await new Promise((done) => setTimeout(done, 1));
}

/** Sets up a mutex as a holder would leave it (what acquire.lua writes); `waited` marks it as waited for. */
async function holdMutex(
  m: MKeys,
  token: string,
  fence: string,
  instance: string,
  leaseMs?: number,
  waited = false,
): Promise<void> {
  await server.admin.set(m.lock, `${token}|${fence}|${instance}${waited ? '|w' : ''}`);
  if (leaseMs !== undefined) await server.admin.pexpire(m.lock, leaseMs);
}

/** A mutex's record as acquire.lua wrote it: owner, fencing token, instance, and whether anyone waited. */
async function mutexRecord(key: string): Promise<{ o: string; f: string; i: string; w: boolean } | null> {
  const value = await server.admin.get(key);
  if (value === null) return null;
  const [o, f, i, w] = value.split('|');
  return { o, f, i, w: w === 'w' };
}

/** Puts a fair waiter in the queue at `score`, with its record (none when `record` is undefined). */
async function queueWaiter(m: MKeys, token: string, score: number, record?: string): Promise<void> {
  await server.admin.zadd(m.queue, score, token);
  if (record !== undefined) await server.admin.hset(m.waiters, token, record);
}

// ---- pub/sub: every message the scripts publish on a channel -----------------------------------

class Listener {
  private readonly received: string[] = [];
  private pending: { marker: string; arrived: () => void } | undefined;
  private markers = 0;

  constructor(
    readonly channel: string,
    readonly sharded: boolean,
  ) {}

  deliver(message: string): void {
    if (this.pending?.marker === message) {
      this.pending.arrived();
      this.pending = undefined;
    } else {
      this.received.push(message);
    }
  }

  /**
   * The messages published on the channel since the last call. Publishes a marker on the same
   * channel and waits for it: the server delivers in order, so everything published before it
   * has arrived by then (no sleeping, and an absent message really is absent).
   */
  async take(): Promise<string[]> {
    const marker = `<marker ${++this.markers}>`;
    const arrived = new Promise<void>((done) => (this.pending = { marker, arrived: done }));
    if (this.sharded) await server.admin.spublish(this.channel, marker);
    else await server.admin.publish(this.channel, marker);
    await arrived;
    return this.received.splice(0);
  }
}

const listeners = new Map<string, Listener>();

async function listen(channel: string, sharded = false): Promise<Listener> {
  const listener = new Listener(channel, sharded);
  listeners.set(`${sharded ? 's' : 'p'}:${channel}`, listener);
  if (sharded) await sub.ssubscribe(channel);
  else await sub.subscribe(channel);
  return listener;
}

beforeAll(async () => {
  sub = server.redis.client();
  server.atEnd(() => sub.quit());
  sub.on('message', (channel: string, message: string) => listeners.get(`p:${channel}`)?.deliver(message));
  sub.on('smessage', (channel: string, message: string) => listeners.get(`s:${channel}`)?.deliver(message));
});

// ================================================================================================

describe('acquire.lua', () => {
  it('takes a free lock: seeds a missing counter from server TIME in microseconds, records o/f/i, leases it', async () => {
    const { m } = fresh('acq-free');
    const before = await clock();
    const reply = await acquire(m, 'tok-a', { lease: 30_000, instance: 'inst-a' });
    const after = await clock();

    expectWithin(reply, before.us, after.us);
    expect(String(reply)).toMatch(/^\d{16}$/);
    expect(await server.admin.get(m.fence)).toBe(String(reply));
    expect(await mutexRecord(m.lock)).toEqual({ o: 'tok-a', f: String(reply), i: 'inst-a', w: false });
    await expectPttlNear(m.lock, 30_000);
    expect(await server.admin.exists(m.queue, m.waiters)).toBe(0);
  });

  it('takes a free lock with a counter behind the clock: the token follows the clock (a failover or restart set it back)', async () => {
    const { m } = fresh('acq-behind');
    await server.admin.set(m.fence, '41');
    const before = await clock();
    const token = await acquire(m, 'tok-a');
    const after = await clock();
    expectWithin(token, before.us, after.us);
    expect(await server.admin.get(m.fence)).toBe(String(token));
    await expectPttlNear(m.fence, 60_000);
  });

  it('a plain grant (empty fence in the value) asked again by its owner answers 0: no token minted, the counter untouched', async () => {
    const { m } = fresh('acq-fast-again');
    await server.admin.set(m.lock, 'tok-a||inst-a', 'PX', 30_000);
    await server.admin.set(m.fence, '8000000000000007');
    expect(await acquire(m, 'tok-a', { lease: 30_000 })).toBe(0);
    expect(await server.admin.get(m.fence)).toBe('8000000000000007');
    // Anyone else finds it busy, and marks it waited for.
    expect(await acquire(m, 'tok-b')).toBeLessThan(0);
    expect(await server.admin.get(m.lock)).toBe('tok-a||inst-a|w');
  });

  it('takes a free lock with an existing counter: the counter goes up by one', async () => {
    const { m } = fresh('acq-incr');
    await server.admin.set(m.fence, '8000000000000041');
    expect(await acquire(m, 'tok-a', { lease: 5_000, instance: 'inst-a' })).toBe(8000000000000042);
    expect(await server.admin.get(m.fence)).toBe('8000000000000042');
    expect(await mutexRecord(m.lock)).toEqual({ o: 'tok-a', f: '8000000000000042', i: 'inst-a', w: false });
    await expectPttlNear(m.lock, 5_000);
  });

  it('keeps a 16-digit counter exact in the hash, the counter and the reply', async () => {
    const { m } = fresh('acq-16');
    await server.admin.set(m.fence, '8000000000000123');
    expect(await acquire(m, 'tok-a')).toBe(8000000000000124);
    expect(await server.admin.get(m.fence)).toBe('8000000000000124');
    expect((await mutexRecord(m.lock))?.f).toBe('8000000000000124');
  });

  it('re-acquire by the owner: PEXPIREs the full lease ARGV[2], returns its token, touches nothing else', async () => {
    const { m } = fresh('acq-owner');
    // As a hand-off leaves it: owned, with only the short hand-off lease.
    await holdMutex(m, 'tok-a', '8000000000000042', 'inst-a', 250);
    await server.admin.set(m.fence, '8000000000000042');
    await queueWaiter(m, 'tok-b', 7, '99999999999999|250|w-b|ib|1|inst-b');

    const reply = await acquire(m, 'tok-a', { lease: 30_000, fair: true, instance: 'inst-other' });

    expect(reply).toBe(8000000000000042);
    await expectPttlNear(m.lock, 30_000);
    expect(await mutexRecord(m.lock)).toEqual({ o: 'tok-a', f: '8000000000000042', i: 'inst-a', w: false });
    expect(await server.admin.get(m.fence)).toBe('8000000000000042');
    expect(await zset(m.queue)).toEqual(['tok-b', '7']);
    expect(await server.admin.hgetall(m.waiters)).toEqual({ 'tok-b': '99999999999999|250|w-b|ib|1|inst-b' });
  });

  it('held by another (not fair): returns minus the remaining PTTL, marks the lock waited for once', async () => {
    const { m } = fresh('acq-held');
    const fence = await acquire(m, 'tok-a', { lease: 30_000, instance: 'inst-a' });

    const reply = await acquire(m, 'tok-b', { lease: 5_000 });
    const left = await server.admin.pttl(m.lock);

    expect(reply).toBeLessThan(0);
    expectWithin(-reply, left, 30_000);
    // The mark tells the holder's release to wake waiters; the TTL is the holder's, untouched.
    expect(await mutexRecord(m.lock)).toEqual({ o: 'tok-a', f: String(fence), i: 'inst-a', w: true });
    await expectPttlNear(m.lock, 30_000);
    expect(await server.admin.get(m.fence)).toBe(String(fence));
    expect(await server.admin.exists(m.queue, m.waiters)).toBe(0);
    // Marked once, however many wait.
    await acquire(m, 'tok-c');
    expect(await server.admin.get(m.lock)).toBe(`tok-a|${fence}|inst-a|w`);
  });

  it('a caller that found it busy before marks the lock it takes as waited for (plain and fair)', async () => {
    const { m } = fresh('acq-waited');
    expect(await acquire(m, 'tok-a', { waited: true, instance: 'inst-a' })).toBeGreaterThan(0);
    expect((await mutexRecord(m.lock))?.w).toBe(true);
    const { m: f } = fresh('acq-waited-fair');
    expect(await acquire(f, 'tok-b', { fair: true, waited: true, instance: 'inst-b' })).toBeGreaterThan(0);
    expect((await mutexRecord(f.lock))?.w).toBe(true);
    const { m: n } = fresh('acq-not-waited-fair');
    expect(await acquire(n, 'tok-c', { fair: true, instance: 'inst-c' })).toBeGreaterThan(0);
    expect((await mutexRecord(n.lock))?.w).toBe(false);
  });

  it('held by another with no TTL: waits at least 1 ms', async () => {
    const { m } = fresh('acq-nottl');
    await holdMutex(m, 'tok-a', '5', 'inst-a');
    expect(await acquire(m, 'tok-b')).toBe(-1);
    expect((await mutexRecord(m.lock))?.o).toBe('tok-a');
  });

  it('fair, held by another: queues the token by arrival (µs) with the record "deadline|ARGV[7]|ARGV[5]|ARGV[8]|ARGV[9]|instance"', async () => {
    const { m } = fresh('acq-fair-queue');
    const fence = await acquire(m, 'tok-a', { lease: 30_000, instance: 'inst-a' });

    const before = await clock();
    const reply = await acquire(m, 'tok-b', {
      fair: true,
      lease: 20_000,
      grant: 250,
      waiterId: 'w-b',
      instance: 'inst-b',
      waiterTtl: 5_000,
    });
    const after = await clock();

    // Still minus the holder's remaining lease.
    expectWithin(-reply, await server.admin.pttl(m.lock), 30_000);
    const [member, score] = await zset(m.queue);
    expect(member).toBe('tok-b');
    expectWithin(Number(score), before.us, after.us);
    const record = await server.admin.hget(m.waiters, 'tok-b');
    // The lease field is the hand-off lease ARGV[7] (250), not the full lease ARGV[2] (20000).
    expect(record).toMatch(/^\d+\|250\|w-b\|ib\|1\|inst-b$/);
    expectWithin(Number(record!.split('|')[0]), before.ms + 5_000, after.ms + 5_000);
    await expectPttlNear(m.queue, 5_000);
    await expectPttlNear(m.waiters, 5_000);
    expect(await mutexRecord(m.lock)).toEqual({ o: 'tok-a', f: String(fence), i: 'inst-a', w: true });
    expect(await server.admin.get(m.fence)).toBe(String(fence));
  });

  it('fair, queued again: keeps its place (ZADD NX), refreshes its record and the TTLs; later arrivals go behind', async () => {
    const { m } = fresh('acq-fair-requeue');
    await acquire(m, 'tok-a', { lease: 30_000 });
    await acquire(m, 'tok-b', { fair: true, waiterTtl: 5_000 });
    const [, firstScore] = await zset(m.queue);
    const firstDeadline = Number((await server.admin.hget(m.waiters, 'tok-b'))!.split('|')[0]);

    await acquire(m, 'tok-c', { fair: true, waiterTtl: 20_000 });
    const before = await clock();
    await acquire(m, 'tok-b', {
      fair: true,
      waiterTtl: 20_000,
      grant: 400,
      waiterId: 'w-b2',
      instance: 'inst-b2',
      seq: 7,
    });
    const after = await clock();

    const queue = await zset(m.queue);
    expect([queue[0], queue[2]]).toEqual(['tok-b', 'tok-c']);
    expect(queue[1]).toBe(firstScore);
    expect(Number(queue[3])).toBeGreaterThan(Number(firstScore));
    const record = (await server.admin.hget(m.waiters, 'tok-b'))!;
    expect(record).toMatch(/^\d+\|400\|w-b2\|ib\|7\|inst-b2$/);
    const deadline = Number(record.split('|')[0]);
    expectWithin(deadline, before.ms + 20_000, after.ms + 20_000);
    expect(deadline).toBeGreaterThan(firstDeadline);
    await expectPttlNear(m.queue, 20_000);
    await expectPttlNear(m.waiters, 20_000);
  });

  it('fair, free, the caller at the head: takes the lock and gives up only its own place', async () => {
    const { m } = fresh('acq-fair-head');
    const far = (await clock()).ms + 60_000;
    await server.admin.set(m.fence, '8000000000000041');
    await queueWaiter(m, 'tok-a', 1, `${far}|250|w-a|ib|1|inst-a`);
    await queueWaiter(m, 'tok-b', 2, `${far}|250|w-b|ib|1|inst-b`);

    expect(await acquire(m, 'tok-a', { fair: true, lease: 10_000, instance: 'inst-a' })).toBe(8000000000000042);

    // Marked waited for: tok-b still queues behind it, so its release must look at the queue.
    expect(await mutexRecord(m.lock)).toEqual({ o: 'tok-a', f: '8000000000000042', i: 'inst-a', w: true });
    await expectPttlNear(m.lock, 10_000);
    expect(await zset(m.queue)).toEqual(['tok-b', '2']);
    expect(await server.admin.hkeys(m.waiters)).toEqual(['tok-b']);
  });

  it('fair, free, but an earlier live waiter goes first: queues behind it and waits until its place would lapse', async () => {
    const { m } = fresh('acq-fair-first');
    const headDeadline = (await clock()).ms + 20_000;
    await queueWaiter(m, 'tok-x', 1, `${headDeadline}|250|w-x|ib|1|inst-x`);

    const before = await clock();
    const reply = await acquire(m, 'tok-b', { fair: true, waiterTtl: 60_000 });
    const after = await clock();

    expectWithin(-reply, headDeadline - after.ms, headDeadline - before.ms);
    expect(await server.admin.exists(m.lock, m.fence)).toBe(0);
    const queue = await zset(m.queue);
    expect([queue[0], queue[2]]).toEqual(['tok-x', 'tok-b']);
    expect(await server.admin.hget(m.waiters, 'tok-x')).toBe(`${headDeadline}|250|w-x|ib|1|inst-x`);
  });

  it('fair, free: skips lapsed heads (a past deadline, or no record at all) and takes the lock', async () => {
    const { m } = fresh('acq-fair-lapsed');
    await server.admin.set(m.fence, '8000000000000009');
    await queueWaiter(m, 'tok-x', 1, '1000|250|w-x|ib|1|inst-x');
    await queueWaiter(m, 'tok-z', 2);

    expect(await acquire(m, 'tok-b', { fair: true, instance: 'inst-b' })).toBe(8000000000000010);

    expect(await mutexRecord(m.lock)).toEqual({ o: 'tok-b', f: '8000000000000010', i: 'inst-b', w: false });
    expect(await server.admin.exists(m.queue, m.waiters)).toBe(0);
  });

  it('fair, free: skips lapsed heads up to the first live waiter, who then goes first', async () => {
    const { m } = fresh('acq-fair-lapsed-live');
    const liveDeadline = (await clock()).ms + 30_000;
    await queueWaiter(m, 'tok-x', 1, '1000|250|w-x|ib|1|inst-x');
    await queueWaiter(m, 'tok-z', 2);
    await queueWaiter(m, 'tok-w', 3, `${liveDeadline}|250|w-w|ib|1|inst-w`);

    const before = await clock();
    const reply = await acquire(m, 'tok-b', { fair: true });
    const after = await clock();

    expectWithin(-reply, liveDeadline - after.ms, liveDeadline - before.ms);
    expect(await server.admin.exists(m.lock)).toBe(0);
    const queue = await zset(m.queue);
    expect([queue[0], queue[1], queue[2]]).toEqual(['tok-w', '3', 'tok-b']);
    expect((await server.admin.hkeys(m.waiters)).sort()).toEqual(['tok-b', 'tok-w']);
  });

  it('not fair: takes a free lock even with live fair waiters queued, and leaves the queue alone', async () => {
    const { m } = fresh('acq-unfair');
    const far = (await clock()).ms + 60_000;
    await queueWaiter(m, 'tok-x', 1, `${far}|250|w-x|ib|1|inst-x`);

    const reply = await acquire(m, 'tok-b', { fair: false });

    expect(reply).toBeGreaterThan(0);
    expect((await mutexRecord(m.lock))?.o).toBe('tok-b');
    expect(await zset(m.queue)).toEqual(['tok-x', '1']);
    expect(await server.admin.hget(m.waiters, 'tok-x')).toBe(`${far}|250|w-x|ib|1|inst-x`);
  });

  it('after a lease lapses, the next caller takes the lock with the next token', async () => {
    const { m } = fresh('acq-lapse');
    await server.admin.set(m.fence, '8000000000000041');
    expect(await acquire(m, 'tok-a')).toBe(8000000000000042);
    await lapse(m.lock);
    expect(await acquire(m, 'tok-b', { instance: 'inst-b' })).toBe(8000000000000043);
    expect(await mutexRecord(m.lock)).toEqual({ o: 'tok-b', f: '8000000000000043', i: 'inst-b', w: false });
  });
});

describe('release.lua', () => {
  it('not the owner: returns 0, leaves the lock alone and publishes nothing', async () => {
    const { m } = fresh('rel-not-owner');
    const channel = await listen(m.channel);
    await holdMutex(m, 'tok-a', '8000000000000042', 'inst-a', 30_000);

    expect(await release(m, 'tok-b')).toBe(0);

    expect(await mutexRecord(m.lock)).toEqual({ o: 'tok-a', f: '8000000000000042', i: 'inst-a', w: false });
    await expectPttlNear(m.lock, 30_000);
    expect(await channel.take()).toEqual([]);
  });

  it('not the owner but queued: withdraws its place and record only', async () => {
    const { m } = fresh('rel-withdraw');
    const channel = await listen(m.channel);
    await acquire(m, 'tok-a', { lease: 30_000 });
    await acquire(m, 'tok-b', { fair: true });
    await acquire(m, 'tok-c', { fair: true });
    const cRecord = await server.admin.hget(m.waiters, 'tok-c');
    // A record without a place in the queue is not the caller's to withdraw.
    await server.admin.hset(m.waiters, 'tok-d', '99999999999999|250|w-d|ib|1|inst-d');

    expect(await release(m, 'tok-b')).toBe(0);
    expect(await release(m, 'tok-d')).toBe(0);

    expect((await zset(m.queue))[0]).toBe('tok-c');
    expect(await server.admin.zcard(m.queue)).toBe(1);
    expect(await server.admin.hgetall(m.waiters)).toEqual({
      'tok-c': cRecord,
      'tok-d': '99999999999999|250|w-d|ib|1|inst-d',
    });
    expect((await mutexRecord(m.lock))?.o).toBe('tok-a');
    expect(await channel.take()).toEqual([]);
  });

  it('the owner, nobody waited: DELs the lock, keeps the counter, publishes nothing', async () => {
    const { m } = fresh('rel-owner-alone');
    const channel = await listen(m.channel);
    await server.admin.set(m.fence, '8000000000000041');
    expect(await acquire(m, 'tok-a')).toBe(8000000000000042);

    expect(await release(m, 'tok-a')).toBe(1);

    expect(await server.admin.exists(m.lock)).toBe(0);
    expect(await server.admin.get(m.fence)).toBe('8000000000000042');
    expect(await channel.take()).toEqual([]);
  });

  it("the owner, someone tried while it was held: DELs the lock, publishes 'r'", async () => {
    const { m } = fresh('rel-owner');
    const channel = await listen(m.channel);
    await server.admin.set(m.fence, '8000000000000041');
    expect(await acquire(m, 'tok-a')).toBe(8000000000000042);
    expect(await acquire(m, 'tok-b')).toBeLessThan(0);

    expect(await release(m, 'tok-a')).toBe(1);

    expect(await server.admin.exists(m.lock)).toBe(0);
    expect(await server.admin.get(m.fence)).toBe('8000000000000042');
    expect(await channel.take()).toEqual(['r']);
    // Released once: a second release by the same token is not the owner's any more.
    expect(await release(m, 'tok-a')).toBe(0);
    expect(await channel.take()).toEqual([]);
  });

  it("hands off to the first live waiter: its owner/fence/instance, its record's lease, 'g<waiterId>:<token>:<lease>:<seq>' on its inbox only", async () => {
    const { m } = fresh('rel-handoff');
    const channel = await listen(`${m.channel}:${INBOX}`);
    const everyone = await listen(m.channel);
    await server.admin.set(m.fence, '8000000000000041');
    expect(await acquire(m, 'tok-a', { lease: 30_000 })).toBe(8000000000000042);
    // A hand-off lease (5 s) far below the full one (30 s), and long enough to read on a loaded machine.
    await acquire(m, 'tok-b', { fair: true, lease: 30_000, grant: 5_000, waiterId: 'w-b', instance: 'inst-b' });
    // Its place renewed: the hand-off names the last attempt the server saw.
    await acquire(m, 'tok-b', { fair: true, lease: 30_000, grant: 5_000, waiterId: 'w-b', instance: 'inst-b', seq: 4 });
    await acquire(m, 'tok-c', { fair: true, grant: 300, waiterId: 'w-c', instance: 'inst-c' });

    expect(await release(m, 'tok-a')).toBe(1);

    // Marked waited for: tok-c still queues behind it.
    expect(await mutexRecord(m.lock)).toEqual({ o: 'tok-b', f: '8000000000000043', i: 'inst-b', w: true });
    expectWithin(await server.admin.pttl(m.lock), 1, 5_000);
    expect(await server.admin.get(m.fence)).toBe('8000000000000043');
    expect((await zset(m.queue))[0]).toBe('tok-c');
    expect(await server.admin.zcard(m.queue)).toBe(1);
    expect(await server.admin.hkeys(m.waiters)).toEqual(['tok-c']);
    expect(await channel.take()).toEqual(['gw-b:8000000000000043:5000:4']);
    expect(await everyone.take()).toEqual([]); // no other engine is told
  });

  it('publishes the exact token string for a 16-digit counter', async () => {
    const { m } = fresh('rel-handoff-16');
    const channel = await listen(`${m.channel}:${INBOX}`);
    await holdMutex(m, 'tok-a', '8000000000000123', 'inst-a', 30_000, true);
    await server.admin.set(m.fence, '8000000000000123');
    await queueWaiter(m, 'tok-b', 1, '99999999999999|250|w-b|ib|1|inst-b');

    expect(await release(m, 'tok-a')).toBe(1);

    expect(await channel.take()).toEqual(['gw-b:8000000000000124:250:1']);
    expect((await mutexRecord(m.lock))?.f).toBe('8000000000000124');
    expect(await server.admin.get(m.fence)).toBe('8000000000000124');
  });

  it('seeds a missing counter from server TIME on a hand-off, and publishes that seed', async () => {
    const { m } = fresh('rel-handoff-seed');
    const channel = await listen(`${m.channel}:${INBOX}`);
    await holdMutex(m, 'tok-a', '5', 'inst-a', 30_000, true);
    await queueWaiter(m, 'tok-b', 1, '99999999999999|250|w-b|ib|1|inst-b');

    const before = await clock();
    expect(await release(m, 'tok-a')).toBe(1);
    const after = await clock();

    const seed = (await server.admin.get(m.fence))!;
    expect(seed).toMatch(/^\d{16}$/);
    expectWithin(Number(seed), before.us, after.us);
    expect(await mutexRecord(m.lock)).toEqual({ o: 'tok-b', f: seed, i: 'inst-b', w: true });
    expect(await channel.take()).toEqual([`gw-b:${seed}:250:1`]);
  });

  it('skips lapsed waiters (past deadline, or no record) and hands off to the first live one', async () => {
    const { m } = fresh('rel-skip');
    const channel = await listen(`${m.channel}:${INBOX}`);
    const far = (await clock()).ms + 60_000;
    await server.admin.set(m.fence, '8000000000000041');
    await holdMutex(m, 'tok-a', '8000000000000041', 'inst-a', 30_000, true);
    await queueWaiter(m, 'tok-x', 1, '1000|250|w-x|ib|1|inst-x');
    await queueWaiter(m, 'tok-z', 2);
    await queueWaiter(m, 'tok-b', 3, `${far}|7000|w-b|ib|1|inst-b`);
    await queueWaiter(m, 'tok-c', 4, `${far}|250|w-c|ib|1|inst-c`);

    expect(await release(m, 'tok-a')).toBe(1);

    expect(await mutexRecord(m.lock)).toEqual({ o: 'tok-b', f: '8000000000000042', i: 'inst-b', w: true });
    expectWithin(await server.admin.pttl(m.lock), 1, 7_000);
    expect(await zset(m.queue)).toEqual(['tok-c', '4']);
    expect(await server.admin.hkeys(m.waiters)).toEqual(['tok-c']);
    expect(await channel.take()).toEqual(['gw-b:8000000000000042:7000:1']);
  });

  it("every waiter lapsed: drains the queue, leaves the lock free, keeps the counter, publishes 'r'", async () => {
    const { m } = fresh('rel-all-lapsed');
    const channel = await listen(m.channel);
    await server.admin.set(m.fence, '8000000000000041');
    await holdMutex(m, 'tok-a', '8000000000000041', 'inst-a', 30_000, true);
    await queueWaiter(m, 'tok-x', 1, '1000|250|w-x|ib|1|inst-x');
    await queueWaiter(m, 'tok-z', 2);

    expect(await release(m, 'tok-a')).toBe(1);

    expect(await server.admin.exists(m.lock, m.queue, m.waiters)).toBe(0);
    expect(await server.admin.get(m.fence)).toBe('8000000000000041');
    expect(await channel.take()).toEqual(['r']);
  });

  it('an unmarked lock (nobody tried it while held) is released with two calls: the queue is not looked at', async () => {
    const { m } = fresh('rel-unmarked');
    const channel = await listen(m.channel);
    await holdMutex(m, 'tok-a', '', 'inst-a', 30_000);
    // A place no script leaves beside an unmarked holder: a waiter that queues marks the lock first.
    await queueWaiter(m, 'tok-b', 1, '99999999999999|250|w-b|ib|1|inst-b');

    expect(await release(m, 'tok-a')).toBe(1);

    expect(await server.admin.exists(m.lock)).toBe(0);
    expect(await server.admin.zcard(m.queue)).toBe(1);
    expect(await channel.take()).toEqual([]);
  });

  it("publishes with the command ARGV[2] names: 'spublish' reaches shard subscribers only", async () => {
    const { m } = fresh('rel-spublish');
    const sharded = await listen(m.channel, true);
    const plain = await listen(m.channel);
    await holdMutex(m, 'tok-a', '8000000000000041', 'inst-a', 30_000, true);

    expect(await release(m, 'tok-a', 'spublish')).toBe(1);

    expect(await sharded.take()).toEqual(['r']);
    expect(await plain.take()).toEqual([]);
  });

  it('a handed-off waiter confirms with acquire.lua: same token, full lease', async () => {
    const { m } = fresh('rel-confirm');
    const channel = await listen(`${m.channel}:${INBOX}`);
    const first = await acquire(m, 'tok-a', { lease: 30_000 });
    await acquire(m, 'tok-b', { fair: true, lease: 30_000, grant: 5_000, waiterId: 'w-b' });
    expect(await release(m, 'tok-a')).toBe(1);
    const [grant] = await channel.take();
    const handed = Number(grant.split(':')[1]);
    expect(handed).toBeGreaterThan(first);
    expectWithin(await server.admin.pttl(m.lock), 1, 5_000);

    expect(await acquire(m, 'tok-b', { fair: true, lease: 30_000 })).toBe(handed);

    await expectPttlNear(m.lock, 30_000);
    expect(await server.admin.get(m.fence)).toBe(String(handed));
  });
});

describe('renew.lua', () => {
  it('mutex items: renews (PEXPIRE to the new lease, longer or shorter) only the tokens it owns', async () => {
    const p = uniquePrefix('lua-renew-m');
    const [own, other, missing, shorter] = ['a', 'b', 'c', 'd'].map((n) => mutexKeys(p, n));
    await holdMutex(own, 'tok-a', '1', 'inst-a', 1_000);
    await holdMutex(other, 'tok-z', '1', 'inst-z', 1_000);
    await holdMutex(shorter, 'tok-a', '1', 'inst-a', 60_000);

    const reply = await renew([
      [own.lock, 'm30000:tok-a'],
      [other.lock, 'm30000:tok-a'],
      [missing.lock, 'm30000:tok-a'],
      [shorter.lock, 'm2000:tok-a'],
    ]);

    expect(reply).toEqual([1, 0, 0, 1]);
    await expectPttlNear(own.lock, 30_000);
    expectWithin(await server.admin.pttl(other.lock), 1, 1_000);
    expect(await server.admin.exists(missing.lock)).toBe(0);
    await expectPttlNear(shorter.lock, 2_000);
    expect((await mutexRecord(other.lock))?.o).toBe('tok-z');
  });

  it('write items: renew a live writer (wd = now + lease, hash TTL raised, never lowered); refuse others', async () => {
    const p = uniquePrefix('lua-renew-w');
    const [live, lapsed, longHash] = ['a', 'b', 'c'].map((n) => rwKeys(p, n));
    const now = (await clock()).ms;
    await server.admin.hset(live.lock, 'w', 'tok-w', 'wd', now + 1_000, 'f', '7', 'wi', 'inst-w');
    await server.admin.pexpire(live.lock, 1_000);
    await server.admin.hset(lapsed.lock, 'w', 'tok-w', 'wd', now - 1_000, 'f', '7', 'wi', 'inst-w');
    await server.admin.pexpire(lapsed.lock, 60_000);
    await server.admin.hset(longHash.lock, 'w', 'tok-w', 'wd', now + 1_000, 'f', '8', 'wi', 'inst-w');
    await server.admin.hset(longHash.lock, 'r:tok-r', `${now + 60_000}|inst-r`);
    await server.admin.pexpire(longHash.lock, 60_000);

    const before = await clock();
    const reply = await renew([
      [live.lock, 'w30000:tok-w'],
      [live.lock, 'w30000:tok-other'],
      [lapsed.lock, 'w30000:tok-w'],
      [longHash.lock, 'w2000:tok-w'],
    ]);
    const after = await clock();

    expect(reply).toEqual([1, 0, 0, 1]);
    const { wd, ...rest } = await server.admin.hgetall(live.lock);
    expect(rest).toEqual({ w: 'tok-w', f: '7', wi: 'inst-w' });
    expectWithin(Number(wd), before.ms + 30_000, after.ms + 30_000);
    await expectPttlNear(live.lock, 30_000);
    expect(await server.admin.hget(lapsed.lock, 'wd')).toBe(String(now - 1_000));
    expectWithin(Number(await server.admin.hget(longHash.lock, 'wd')), before.ms + 2_000, after.ms + 2_000);
    await expectPttlNear(longHash.lock, 60_000);
  });

  it('read items: renew a live reader (keeping "|instance" as is); refuse a lapsed or absent one', async () => {
    const p = uniquePrefix('lua-renew-r');
    const [live, lapsed, absent] = ['a', 'b', 'c'].map((n) => rwKeys(p, n));
    const now = (await clock()).ms;
    await server.admin.hset(live.lock, 'r:tok-r', `${now + 1_000}|inst|with|bars`);
    await server.admin.pexpire(live.lock, 1_000);
    await server.admin.hset(lapsed.lock, 'r:tok-r', `${now - 1_000}|inst-r`);
    await server.admin.pexpire(lapsed.lock, 60_000);

    const before = await clock();
    const reply = await renew([
      [live.lock, 'r30000:tok-r'],
      [lapsed.lock, 'r30000:tok-r'],
      [absent.lock, 'r30000:tok-r'],
    ]);
    const after = await clock();

    expect(reply).toEqual([1, 0, 0]);
    const field = (await server.admin.hget(live.lock, 'r:tok-r'))!;
    expect(field).toMatch(/^\d+\|inst\|with\|bars$/);
    expectWithin(Number(field.split('|')[0]), before.ms + 30_000, after.ms + 30_000);
    await expectPttlNear(live.lock, 30_000);
    expect(await server.admin.hget(lapsed.lock, 'r:tok-r')).toBe(`${now - 1_000}|inst-r`);
    expect(await server.admin.exists(absent.lock)).toBe(0);
  });

  it('a mixed batch: each kind checks its own field, and replies line up with KEYS', async () => {
    const { m, rw } = fresh('renew-mixed');
    const now = (await clock()).ms;
    await holdMutex(m, 'tok-1', '1', 'inst', 1_000);
    await server.admin.hset(rw.lock, 'w', 'tok-2', 'wd', now + 1_000, 'f', '3', 'wi', 'inst');
    await server.admin.hset(rw.lock, 'r:tok-3', `${now + 1_000}|inst`);
    await server.admin.pexpire(rw.lock, 1_000);

    // The same tokens under the wrong kind are not held: a mutex token is not a writer, and so on.
    const reply = await renew([
      [m.lock, 'm5000:tok-1'],
      [rw.lock, 'w5000:tok-1'],
      [rw.lock, 'w5000:tok-2'],
      [rw.lock, 'r5000:tok-2'],
      [rw.lock, 'r5000:tok-3'],
      [m.lock, 'm5000:tok-3'],
    ]);

    expect(reply).toEqual([1, 0, 1, 0, 1, 0]);
    await expectPttlNear(m.lock, 5_000);
    await expectPttlNear(rw.lock, 5_000);
  });
});

describe('rw-acquire.lua', () => {
  it('read on a free lock: adds "r:<token>" = "deadline|instance", returns the counter (none yet: seeded from the clock, expiring)', async () => {
    const { rw } = fresh('rw-read-free');
    const before = await clock();
    const token = await readLock(rw, 'tok-r', { lease: 20_000, instance: 'inst-r' });
    const after = await clock();
    // Above every write before (the clock), below the next write (which increments it).
    expectWithin(token, before.ms * 1000, after.ms * 1000 + 999);
    expect(await server.admin.get(rw.fence)).toBe(String(token));
    await expectPttlNear(rw.fence, 60_000);

    const flat = await server.admin.hgetall(rw.lock);
    expect(Object.keys(flat)).toEqual(['r:tok-r']);
    expect(flat['r:tok-r']).toMatch(/^\d+\|inst-r$/);
    expectWithin(Number(flat['r:tok-r'].split('|')[0]), before.ms + 20_000, after.ms + 20_000);
    await expectPttlNear(rw.lock, 20_000);
    expect(await server.admin.exists(rw.writers)).toBe(0);
  });

  it('read returns the last write token from the counter', async () => {
    const { rw } = fresh('rw-read-counter');
    await server.admin.set(rw.fence, '1700000000000007');
    expect(await readLock(rw, 'tok-r')).toBe(1700000000000007);
  });

  it('readers share; the hash TTL only ever grows to cover the latest deadline', async () => {
    const { rw } = fresh('rw-readers-share');
    expect(await readLock(rw, 'tok-1', { lease: 60_000 })).toBeGreaterThan(0); // granted (a refusal is negative)
    expect(await readLock(rw, 'tok-2', { lease: 1_000 })).toBeGreaterThan(0); // granted (a refusal is negative)
    await expectPttlNear(rw.lock, 60_000);
    expect(await readLock(rw, 'tok-3', { lease: 120_000 })).toBeGreaterThan(0); // granted (a refusal is negative)
    await expectPttlNear(rw.lock, 120_000);
    expect((await server.admin.hkeys(rw.lock)).sort()).toEqual(['r:tok-1', 'r:tok-2', 'r:tok-3']);
  });

  it('read by a reader that already holds (a hand-off confirmed, a lost reply): returns the counter, restarts its lease from now', async () => {
    const { rw } = fresh('rw-read-again');
    await server.admin.set(rw.fence, '12');
    await readLock(rw, 'tok-r', { lease: 2_000, instance: 'inst-r' });

    const before = await clock();
    expect(await readLock(rw, 'tok-r', { lease: 90_000, instance: 'other' })).toBe(12);
    const after = await clock();

    const [deadline, instance] = (await server.admin.hget(rw.lock, 'r:tok-r'))!.split('|');
    expectWithin(Number(deadline), before.ms + 90_000, after.ms + 90_000);
    expect(instance).toBe('inst-r');
    await expectPttlNear(rw.lock, 90_000);
  });

  it('write on a free lock: seeds a missing counter from TIME (µs), sets w/wd/f/wi, leases the hash', async () => {
    const { rw } = fresh('rw-write-free');
    const before = await clock();
    const reply = await writeLock(rw, 'tok-w', { lease: 20_000, instance: 'inst-w' });
    const after = await clock();

    expectWithin(reply, before.us, after.us);
    expect(await server.admin.get(rw.fence)).toBe(String(reply));
    const { wd, ...rest } = await server.admin.hgetall(rw.lock);
    expect(rest).toEqual({ w: 'tok-w', f: String(reply), wi: 'inst-w' });
    expectWithin(Number(wd), before.ms + 20_000, after.ms + 20_000);
    await expectPttlNear(rw.lock, 20_000);
  });

  it('write on a free lock with a counter: next token, and the writer leaves the waiting writers', async () => {
    const { rw } = fresh('rw-write-counter');
    await server.admin.set(rw.fence, '8000000000000041');
    const far = (await clock()).ms + 60_000;
    await server.admin.zadd(rw.writers, far, 'tok-w', far + 1, 'tok-other');

    expect(await writeLock(rw, 'tok-w')).toBe(8000000000000042);

    expect(await server.admin.get(rw.fence)).toBe('8000000000000042');
    expect(await server.admin.hget(rw.lock, 'f')).toBe('8000000000000042');
    expect(await zset(rw.writers)).toEqual(['tok-other', String(far + 1)]);
  });

  it('write by the writer that holds it: returns its token, restarts its lease from now, mints nothing', async () => {
    const { rw } = fresh('rw-write-again');
    const fence = await writeLock(rw, 'tok-w', { lease: 2_000 });
    const { wd: _wd, ...flat } = await server.admin.hgetall(rw.lock);

    const before = await clock();
    expect(await writeLock(rw, 'tok-w', { lease: 90_000 })).toBe(fence);
    const after = await clock();

    const { wd, ...rest } = await server.admin.hgetall(rw.lock);
    expect(rest).toEqual(flat);
    expectWithin(Number(wd), before.ms + 90_000, after.ms + 90_000);
    expect(await server.admin.get(rw.fence)).toBe(String(fence));
    await expectPttlNear(rw.lock, 90_000);
  });

  it('write while readers hold: waits for the latest reader, takes a place (score now + place TTL)', async () => {
    const { rw } = fresh('rw-write-readers');
    await readLock(rw, 'tok-1', { lease: 20_000 });
    await readLock(rw, 'tok-2', { lease: 60_000 });
    const latest = Number((await server.admin.hget(rw.lock, 'r:tok-2'))!.split('|')[0]);

    const before = await clock();
    const reply = await writeLock(rw, 'tok-w', { placeTtl: 5_000 });
    const after = await clock();

    expectWithin(-reply, latest - after.ms, latest - before.ms);
    const [member, score] = await zset(rw.writers);
    expect(member).toBe('tok-w');
    expectWithin(Number(score), before.ms + 5_000, after.ms + 5_000);
    await expectPttlNear(rw.writers, 5_000);
    expect((await server.admin.hkeys(rw.lock)).sort()).toEqual(['r:tok-1', 'r:tok-2']);
    expect(await server.admin.exists(rw.fence)).toBe(1); // seeded by the first read, not moved by the waiting write
  });

  it('waiting writers: asking again refreshes the place; the zset TTL is raised, never lowered', async () => {
    const { rw } = fresh('rw-write-place');
    await readLock(rw, 'tok-r', { lease: 60_000 });
    await writeLock(rw, 'tok-w', { placeTtl: 1_000 });
    const [, first] = await zset(rw.writers);

    await writeLock(rw, 'tok-w', { placeTtl: 30_000 });
    await writeLock(rw, 'tok-v', { placeTtl: 1_000 });

    const writers = await zset(rw.writers);
    const scores = new Map([
      [writers[0], Number(writers[1])],
      [writers[2], Number(writers[3])],
    ]);
    expect(scores.get('tok-w')!).toBeGreaterThan(Number(first) + 20_000);
    expect(scores.has('tok-v')).toBe(true);
    await expectPttlNear(rw.writers, 30_000);
  });

  it('write while another writer holds: waits for its deadline and takes a place', async () => {
    const { rw } = fresh('rw-write-writer');
    const fence = await writeLock(rw, 'tok-1', { lease: 30_000 });
    const wd = Number(await server.admin.hget(rw.lock, 'wd'));

    const before = await clock();
    const reply = await writeLock(rw, 'tok-2');
    const after = await clock();

    expectWithin(-reply, wd - after.ms, wd - before.ms);
    expect(await server.admin.hget(rw.lock, 'w')).toBe('tok-1');
    expect(await server.admin.get(rw.fence)).toBe(String(fence));
    expect((await zset(rw.writers))[0]).toBe('tok-2');
  });

  it('read while a writer holds: waits for its deadline, adds nothing', async () => {
    const { rw } = fresh('rw-read-writer');
    await writeLock(rw, 'tok-w', { lease: 30_000 });
    const wd = Number(await server.admin.hget(rw.lock, 'wd'));

    const before = await clock();
    const reply = await readLock(rw, 'tok-r');
    const after = await clock();

    expectWithin(-reply, wd - after.ms, wd - before.ms);
    expect((await server.admin.hkeys(rw.lock)).sort()).toEqual(['f', 'w', 'wd', 'wi']);
    expect(await server.admin.exists(rw.writers)).toBe(0);
  });

  it("writer preference ('1'): a read waits until the first live writer's place lapses; without it, reads go in", async () => {
    const { rw } = fresh('rw-preference');
    const place = (await clock()).ms + 20_000;
    await server.admin.zadd(rw.writers, place, 'tok-w', place + 5_000, 'tok-v');

    const before = await clock();
    const reply = await readLock(rw, 'tok-1', { preference: true });
    const after = await clock();

    expectWithin(-reply, place - after.ms, place - before.ms);
    expect(await server.admin.exists(rw.lock)).toBe(0);
    expect(await server.admin.zcard(rw.writers)).toBe(2);

    expect(await readLock(rw, 'tok-2', { preference: false })).toBeGreaterThan(0); // granted (a refusal is negative)
    expect(await server.admin.hkeys(rw.lock)).toEqual(['r:tok-2']);
  });

  it('writer preference: lapsed writer places are dropped, and the read goes in', async () => {
    const { rw } = fresh('rw-preference-lapsed');
    const now = (await clock()).ms;
    await server.admin.zadd(rw.writers, now - 1_000, 'tok-old');

    expect(await readLock(rw, 'tok-r', { preference: true })).toBeGreaterThan(0); // granted (a refusal is negative)

    expect(await server.admin.exists(rw.writers)).toBe(0);
    expect(await server.admin.hkeys(rw.lock)).toEqual(['r:tok-r']);
  });

  it('downgrade: a read naming the held write token goes in beside the writer, even past waiting writers', async () => {
    const { rw } = fresh('rw-downgrade');
    const fence = await writeLock(rw, 'tok-w', { lease: 30_000 });
    const far = (await clock()).ms + 60_000;
    await server.admin.zadd(rw.writers, far, 'tok-v');

    expect(await readLock(rw, 'tok-r', { heldWrite: 'tok-w', preference: true, instance: 'inst-r' })).toBe(fence);
    // Naming some other write token is no downgrade.
    expect(await readLock(rw, 'tok-x', { heldWrite: 'tok-nope' })).toBeLessThan(0);

    expect((await server.admin.hkeys(rw.lock)).sort()).toEqual(['f', 'r:tok-r', 'w', 'wd', 'wi']);
    expect(await server.admin.hget(rw.lock, 'w')).toBe('tok-w');
    expect(await server.admin.hget(rw.lock, 'r:tok-r')).toMatch(/^\d+\|inst-r$/);
  });

  it('drops lapsed holders (readers and the writer, by their own deadlines) before deciding', async () => {
    const { rw } = fresh('rw-lapsed-holders');
    const now = (await clock()).ms;
    await server.admin.set(rw.fence, '8000000000000009');
    await server.admin.hset(rw.lock, 'r:tok-old', `${now - 1_000}|inst-old`);
    await server.admin.hset(rw.lock, 'w', 'tok-dead', 'wd', now - 1_000, 'f', '9', 'wi', 'inst-dead');
    await server.admin.pexpire(rw.lock, 60_000);

    const before = await clock();
    expect(await writeLock(rw, 'tok-w', { lease: 10_000, instance: 'inst-w' })).toBe(8000000000000010);
    const after = await clock();

    const { wd, ...rest } = await server.admin.hgetall(rw.lock);
    expect(rest).toEqual({ w: 'tok-w', f: '8000000000000010', wi: 'inst-w' });
    expectWithin(Number(wd), before.ms + 10_000, after.ms + 10_000);
  });

  it('a lapsed writer does not block a read; lapsed readers are cleaned up by it too', async () => {
    const { rw } = fresh('rw-lapsed-read');
    const now = (await clock()).ms;
    await server.admin.hset(rw.lock, 'w', 'tok-dead', 'wd', now - 1_000, 'f', '9', 'wi', 'inst-dead');
    await server.admin.hset(rw.lock, 'r:tok-old', `${now - 1_000}|inst-old`);
    await server.admin.hset(rw.lock, 'r:tok-live', `${now + 60_000}|inst-live`);
    await server.admin.pexpire(rw.lock, 60_000);

    expect(await readLock(rw, 'tok-r')).toBeGreaterThan(0); // granted (a refusal is negative)

    expect((await server.admin.hkeys(rw.lock)).sort()).toEqual(['r:tok-live', 'r:tok-r']);
  });
});

describe('rw-release.lua', () => {
  it("write, by the writer: removes w/wd/f/wi, keeps the counter, publishes 'a'", async () => {
    const { rw } = fresh('rwrel-write');
    const channel = await listen(rw.channel);
    const fence = await writeLock(rw, 'tok-w');

    expect(await rwRelease(rw, 'tok-w', 'w')).toBe(1);

    expect(await server.admin.exists(rw.lock)).toBe(0);
    expect(await server.admin.get(rw.fence)).toBe(String(fence));
    expect(await channel.take()).toEqual(['a']);
  });

  it('write, after a downgrade: the read lease stays', async () => {
    const { rw } = fresh('rwrel-downgraded');
    const channel = await listen(rw.channel);
    await writeLock(rw, 'tok-w');
    await readLock(rw, 'tok-r', { heldWrite: 'tok-w' });
    const field = await server.admin.hget(rw.lock, 'r:tok-r');

    expect(await rwRelease(rw, 'tok-w', 'w')).toBe(1);

    expect(await server.admin.hgetall(rw.lock)).toEqual({ 'r:tok-r': field });
    expect(await channel.take()).toEqual(['a']);
  });

  it('write, by a writer that holds nothing: returns 0 and withdraws its place only', async () => {
    const { rw } = fresh('rwrel-withdraw');
    const channel = await listen(rw.channel);
    await writeLock(rw, 'tok-w', { lease: 30_000 });
    await writeLock(rw, 'tok-2');
    await writeLock(rw, 'tok-3');
    const flat = await server.admin.hgetall(rw.lock);

    expect(await rwRelease(rw, 'tok-2', 'w')).toBe(0);

    expect((await zset(rw.writers))[0]).toBe('tok-3');
    expect(await server.admin.zcard(rw.writers)).toBe(1);
    expect(await server.admin.hgetall(rw.lock)).toEqual(flat);
    expect(await channel.take()).toEqual([]);
  });

  it('read, by a token that holds no read: returns 0, changes nothing, publishes nothing', async () => {
    const { rw } = fresh('rwrel-read-none');
    const channel = await listen(rw.channel);
    await readLock(rw, 'tok-1');
    await server.admin.zadd(rw.writers, (await clock()).ms + 60_000, 'tok-w');

    expect(await rwRelease(rw, 'tok-2', 'r')).toBe(0);

    expect(await server.admin.hkeys(rw.lock)).toEqual(['r:tok-1']);
    expect(await channel.take()).toEqual([]);
  });

  it('read, other live readers remain: removes only its field and wakes nobody, even with writers waiting', async () => {
    const { rw } = fresh('rwrel-read-others');
    const channel = await listen(rw.channel);
    await readLock(rw, 'tok-1');
    await readLock(rw, 'tok-2');
    await server.admin.zadd(rw.writers, (await clock()).ms + 60_000, 'tok-w');

    expect(await rwRelease(rw, 'tok-1', 'r')).toBe(1);

    expect(await server.admin.hkeys(rw.lock)).toEqual(['r:tok-2']);
    expect(await channel.take()).toEqual([]);
  });

  it("read, the last live reader (a lapsed one does not count), writers waiting: publishes 'a'", async () => {
    const { rw } = fresh('rwrel-read-last');
    const channel = await listen(rw.channel);
    const now = (await clock()).ms;
    await readLock(rw, 'tok-1');
    await server.admin.hset(rw.lock, 'r:tok-old', `${now - 1_000}|inst-old`);
    await server.admin.zadd(rw.writers, now + 60_000, 'tok-w');

    expect(await rwRelease(rw, 'tok-1', 'r')).toBe(1);

    expect(await server.admin.hkeys(rw.lock)).toEqual(['r:tok-old']);
    expect(await zset(rw.writers)).toEqual(['tok-w', String(now + 60_000)]);
    expect(await channel.take()).toEqual(['a']);
  });

  it('read, the last reader, no writers waiting: releases without a message', async () => {
    const { rw } = fresh('rwrel-read-quiet');
    const channel = await listen(rw.channel);
    await readLock(rw, 'tok-1');

    expect(await rwRelease(rw, 'tok-1', 'r')).toBe(1);

    expect(await server.admin.exists(rw.lock)).toBe(0);
    expect(await channel.take()).toEqual([]);
  });
});

describe('rw queue: places, and the hand-off in rw-release.lua', () => {
  /** The record rw-acquire.lua keeps for a place: "deadline|kind|lease|waiterId|inbox|seq|instance". */
  async function record(rw: RwKeys, token: string): Promise<string[] | undefined> {
    return (await server.admin.hget(rw.waiters, token))?.split('|');
  }

  it('a queued attempt that finds the lock busy takes a place by arrival (µs) with its record; a writer stays a waiting writer too', async () => {
    const { rw } = fresh('rwq-place');
    await readLock(rw, 'tok-r', { lease: 30_000 });

    const before = await clock();
    expect(
      await writeLock(rw, 'tok-w', { queued: { waiterId: 'w-w', placeTtl: 5_000, grant: 700, seq: 3 } }),
    ).toBeLessThan(0);
    const after = await clock();

    const [member, score] = await zset(rw.queue);
    expect(member).toBe('tok-w');
    expectWithin(Number(score), before.us, after.us);
    const [deadline, ...rest] = (await record(rw, 'tok-w'))!;
    expectWithin(Number(deadline), before.ms + 5_000, after.ms + 5_000);
    expect(rest).toEqual(['w', '700', 'w-w', INBOX, '3', 'inst-tok-w']);
    expect((await zset(rw.writers))[0]).toBe('tok-w');
    await expectPttlNear(rw.queue, 5_000);
    await expectPttlNear(rw.waiters, 5_000);
  });

  it('the last reader hands the lock to the queued writer: w/wd/f/wi set for the hand-off lease, one message on its inbox only', async () => {
    const { rw } = fresh('rwq-to-writer');
    const inbox = await listen(`${rw.channel}:${INBOX}`);
    const everyone = await listen(rw.channel);
    await readLock(rw, 'tok-r');
    await server.admin.set(rw.fence, '8000000000000041');
    await writeLock(rw, 'tok-w', { instance: 'inst-w', queued: { waiterId: 'w-w', grant: 5_000, seq: 2 } });

    const before = await clock();
    expect(await rwRelease(rw, 'tok-r', 'r')).toBe(1);
    const after = await clock();

    const { wd, ...rest } = await server.admin.hgetall(rw.lock);
    expect(rest).toEqual({ w: 'tok-w', f: '8000000000000042', wi: 'inst-w' });
    expectWithin(Number(wd), before.ms + 5_000, after.ms + 5_000);
    expect(await server.admin.get(rw.fence)).toBe('8000000000000042');
    expect(await server.admin.exists(rw.queue, rw.waiters, rw.writers)).toBe(0);
    expect(await inbox.take()).toEqual(['gw-w:8000000000000042:5000:2']);
    expect(await everyone.take()).toEqual([]);
    // The writer, told, holds it; a confirming attempt would find it its own and start the full lease.
    expect(await writeLock(rw, 'tok-w', { lease: 30_000 })).toBe(8000000000000042);
    await expectPttlNear(rw.lock, 30_000);
  });

  it('a writer hands the lock to the readers at the head of the queue together, with the last write token, and stops at a writer', async () => {
    const { rw } = fresh('rwq-to-readers');
    const inbox = await listen(`${rw.channel}:${INBOX}`);
    const everyone = await listen(rw.channel);
    const fence = await writeLock(rw, 'tok-w');
    for (const [token, kind] of [
      ['tok-1', 'r'],
      ['tok-2', 'r'],
      ['tok-3', 'w'],
      ['tok-4', 'r'],
    ] as const) {
      const queued = { waiterId: `w-${token}`, grant: 4_000 };
      if (kind === 'r') await readLock(rw, token, { preference: true, queued });
      else await writeLock(rw, token, { queued });
    }

    expect(await rwRelease(rw, 'tok-w', 'w')).toBe(1);

    expect((await server.admin.hkeys(rw.lock)).sort()).toEqual(['r:tok-1', 'r:tok-2']);
    await expectPttlNear(rw.lock, 4_000);
    expect(await inbox.take()).toEqual([`gw-tok-1:${fence}:4000:1`, `gw-tok-2:${fence}:4000:1`]);
    expect(await everyone.take()).toEqual([]);
    expect(await server.admin.zrange(rw.queue, '0', '-1')).toEqual(['tok-3', 'tok-4']);
    expect((await server.admin.hkeys(rw.waiters)).sort()).toEqual(['tok-3', 'tok-4']);
    // tok-4 waits behind the writer ahead of it, though readers hold.
    expect(await readLock(rw, 'tok-4', { preference: true, queued: {} })).toBeLessThan(0);
  });

  it('lapsed places (past their deadline, or without a record) are skipped and dropped', async () => {
    const { rw } = fresh('rwq-lapsed');
    const inbox = await listen(`${rw.channel}:${INBOX}`);
    await writeLock(rw, 'tok-w');
    const now = (await clock()).ms;
    await server.admin.zadd(rw.queue, 1, 'tok-gone', 2, 'tok-late', 3, 'tok-live');
    await server.admin.hset(rw.waiters, 'tok-late', `${now - 1}|w|250|w-late|${INBOX}|1|inst-late`);
    await server.admin.hset(rw.waiters, 'tok-live', `${now + 60_000}|w|250|w-live|${INBOX}|1|inst-live`);

    expect(await rwRelease(rw, 'tok-w', 'w')).toBe(1);

    expect(await server.admin.hget(rw.lock, 'w')).toBe('tok-live');
    expect(await server.admin.exists(rw.queue, rw.waiters)).toBe(0);
    expect(await inbox.take()).toEqual([expect.stringMatching(/^gw-live:\d+:250:1$/)]);
  });

  it('a queued writer waits behind a live place ahead of it even on a free lock; a first attempt may still barge', async () => {
    const { rw } = fresh('rwq-order');
    const now = (await clock()).ms;
    await server.admin.zadd(rw.queue, 1, 'tok-head');
    await server.admin.hset(rw.waiters, 'tok-head', `${now + 20_000}|r|250|w-head|${INBOX}|1|inst-head`);

    const reply = await writeLock(rw, 'tok-w', { queued: {} });
    expectWithin(-reply, 1, 20_000);
    expect(await server.admin.exists(rw.lock)).toBe(0);
    expect(await server.admin.zrange(rw.queue, '0', '-1')).toEqual(['tok-head', 'tok-w']);

    // A reader without writer preference goes in past the queued writer; with it, it queues behind.
    expect(await readLock(rw, 'tok-np', { queued: {} })).toBeGreaterThan(0);
    expect(await readLock(rw, 'tok-p', { preference: true, queued: {} })).toBeLessThan(0);
    // A first (unqueued) write finds a reader holding: busy, but no place in the queue.
    expect(await writeLock(rw, 'tok-x')).toBeLessThan(0);
    expect(await server.admin.zscore(rw.queue, 'tok-x')).toBeNull();
  });

  it('a queued reader with writer preference also waits for a waiting writer that has no place yet, but not for one behind it', async () => {
    const { rw } = fresh('rwq-unplaced-writer');
    const now = (await clock()).ms;
    await readLock(rw, 'tok-r', { preference: true, queued: {} }); // free: granted, no place
    await server.admin.zadd(rw.writers, now + 20_000, 'tok-w');

    expect(await readLock(rw, 'tok-p', { preference: true, queued: {} })).toBeLessThan(0);
    expect(await server.admin.zrange(rw.queue, '0', '-1')).toEqual(['tok-p']);
    // Once that writer has its place (behind the reader), the reader goes first.
    await server.admin.zadd(rw.queue, Number.MAX_SAFE_INTEGER, 'tok-w');
    await server.admin.hset(rw.waiters, 'tok-w', `${now + 20_000}|w|250|w-w|${INBOX}|1|inst-w`);
    expect(await readLock(rw, 'tok-p', { preference: true, queued: {} })).toBeGreaterThan(0);
    expect(await server.admin.zrange(rw.queue, '0', '-1')).toEqual(['tok-w']);
  });

  it('a read released while the write it was downgraded from is held hands nothing off', async () => {
    const { rw } = fresh('rwq-downgrade');
    const inbox = await listen(`${rw.channel}:${INBOX}`);
    await writeLock(rw, 'tok-w');
    await readLock(rw, 'tok-d', { heldWrite: 'tok-w' });
    await readLock(rw, 'tok-r', { preference: true, queued: {} });

    expect(await rwRelease(rw, 'tok-d', 'r')).toBe(1);

    expect(await server.admin.hget(rw.lock, 'w')).toBe('tok-w');
    expect(await server.admin.hexists(rw.lock, 'r:tok-r')).toBe(0);
    expect(await inbox.take()).toEqual([]);
    // The writer's release hands it off.
    expect(await rwRelease(rw, 'tok-w', 'w')).toBe(1);
    expect(await server.admin.hexists(rw.lock, 'r:tok-r')).toBe(1);
    expect(await inbox.take()).toEqual([expect.stringMatching(/^gw-tok-r:\d+:250:1$/)]);
  });

  it('a waiter that gives up withdraws its place and record (and its waiting-writer entry)', async () => {
    const { rw } = fresh('rwq-withdraw');
    await readLock(rw, 'tok-r');
    await writeLock(rw, 'tok-w', { queued: {} });
    await writeLock(rw, 'tok-v', { queued: {} });

    expect(await rwRelease(rw, 'tok-w', 'w')).toBe(0);

    expect(await server.admin.zrange(rw.queue, '0', '-1')).toEqual(['tok-v']);
    expect(await server.admin.hkeys(rw.waiters)).toEqual(['tok-v']);
    expect(await server.admin.zrange(rw.writers, '0', '-1')).toEqual(['tok-v']);
    expect(await server.admin.hkeys(rw.lock)).toEqual(['r:tok-r']);
  });
});

describe('inspect.lua', () => {
  it("a lock never used: ['', 0, 0, 0]", async () => {
    const { m, rw } = fresh('insp-empty');
    expect(await inspect(m, rw)).toEqual(['', 0, 0, 0]);
  });

  it('free: the mutex counter, and waiters counted from both queues; lapsed rw holders are ignored', async () => {
    const { m, rw } = fresh('insp-free');
    const now = (await clock()).ms;
    await server.admin.set(m.fence, '41');
    await server.admin.set(rw.fence, '99');
    await queueWaiter(m, 'tok-x', 1, `${now + 60_000}|250|w-x|ib|1|inst-x`);
    await queueWaiter(m, 'tok-y', 2, `${now + 60_000}|250|w-y|ib|1|inst-y`);
    // Read/write waiters: a writer without a place yet, and a writer and a reader with one.
    await server.admin.zadd(rw.writers, now + 60_000, 'tok-w', now + 60_000, 'tok-v');
    await server.admin.zadd(rw.queue, 1, 'tok-v', 2, 'tok-r');
    await server.admin.hset(rw.lock, 'w', 'tok-dead', 'wd', now - 1_000, 'f', '99', 'wi', 'inst-dead');
    await server.admin.hset(rw.lock, 'r:tok-old', `${now - 1_000}|inst-old`);

    expect(await inspect(m, rw)).toEqual(['', 0, 41, 5]);
  });

  it("a plain grant whose token nobody read (empty fence in the value): '' for the token, not the counter", async () => {
    const { m, rw } = fresh('insp-fast');
    await server.admin.set(m.lock, 'tok-secret||inst-a', 'PX', 30_000);
    await server.admin.set(m.fence, '8000000000000005');
    const reply = await inspect(m, rw);
    expect(reply).toEqual(['mutex', expect.any(Number), '', 0, 'inst-a', reply[1]]);
  });

  it('a held mutex: mode, PTTL, fencing token, fair waiters, one instance/ttl pair, never the owner token', async () => {
    const { m, rw } = fresh('insp-mutex');
    await server.admin.set(m.fence, '8000000000000041');
    await acquire(m, 'tok-secret', { lease: 30_000, instance: 'inst-a' });
    await acquire(m, 'tok-b', { fair: true });
    await acquire(m, 'tok-c', { fair: true });
    // The read/write side of the same name is not looked at while the mutex is held.
    await writeLock(rw, 'tok-w');

    const reply = await inspect(m, rw);

    expect(reply).toEqual(['mutex', expect.any(Number), 8000000000000042, 2, 'inst-a', reply[1]]);
    expectWithin(reply[1] as number, await server.admin.pttl(m.lock), 30_000);
    expect(JSON.stringify(reply)).not.toContain('tok-');
  });

  it("a mutex waited for: the '|w' mark is not part of the instance", async () => {
    const { m, rw } = fresh('insp-mutex-waited');
    await holdMutex(m, 'tok-a', '7', 'inst-a', 10_000, true);

    const reply = await inspect(m, rw);

    expect(reply).toEqual(['mutex', reply[1], 7, 0, 'inst-a', reply[1]]);
    expectWithin(reply[1] as number, 9_000, 10_000);
  });

  it('a writer: remaining time from wd, its fencing token, waiting writers only, its instance', async () => {
    const { m, rw } = fresh('insp-write');
    const fence = await writeLock(rw, 'tok-w', { lease: 30_000, instance: 'inst-w' });
    const wd = Number(await server.admin.hget(rw.lock, 'wd'));
    await readLock(rw, 'tok-r', { heldWrite: 'tok-w' });
    await server.admin.zadd(rw.writers, wd + 60_000, 'tok-v');
    await queueWaiter(m, 'tok-x', 1, `${wd + 60_000}|250|w-x|ib|1|inst-x`);

    const before = await clock();
    const reply = await inspect(m, rw);
    const after = await clock();

    expect(reply).toEqual(['write', reply[1], fence, 1, 'inst-w', reply[1]]);
    expectWithin(reply[1] as number, wd - after.ms, wd - before.ms);
  });

  it('readers: one instance/ttl pair per live reader, the longest ttl, the rw counter, waiting writers', async () => {
    const { m, rw } = fresh('insp-read');
    const now = (await clock()).ms;
    await server.admin.set(m.fence, '8000000000000041');
    await server.admin.set(rw.fence, '12');
    await server.admin.hset(rw.lock, 'r:tok-1', `${now + 30_000}|inst-1`);
    await server.admin.hset(rw.lock, 'r:tok-2', `${now + 60_000}|inst-2`);
    await server.admin.hset(rw.lock, 'r:tok-old', `${now - 1_000}|inst-old`);
    await server.admin.hset(rw.lock, 'w', 'tok-dead', 'wd', now - 1_000, 'f', '11', 'wi', 'inst-dead');
    await server.admin.zadd(rw.writers, now + 60_000, 'tok-w');
    await queueWaiter(m, 'tok-x', 1, `${now + 60_000}|250|w-x|ib|1|inst-x`);

    const before = await clock();
    const reply = await inspect(m, rw);
    const after = await clock();

    expect(reply.slice(0, 1)).toEqual(['read']);
    expect(reply.slice(2, 4)).toEqual([12, 1]);
    expect(reply).toHaveLength(8);
    const pairs = [reply.slice(4, 6), reply.slice(6, 8)].sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    expect(pairs.map((pair) => pair[0])).toEqual(['inst-1', 'inst-2']);
    expectWithin(pairs[0][1] as number, now + 30_000 - after.ms, now + 30_000 - before.ms);
    expectWithin(pairs[1][1] as number, now + 60_000 - after.ms, now + 60_000 - before.ms);
    expect(reply[1]).toBe(pairs[1][1]);
  });
});

describe('force-unlock.lua', () => {
  it("both locks held: deletes both with their queues, keeps the counters, publishes 'r' and 'a'", async () => {
    const { m, rw } = fresh('force-both');
    const mutexChannel = await listen(m.channel);
    const rwChannel = await listen(rw.channel);
    const mutexFence = await acquire(m, 'tok-a');
    await acquire(m, 'tok-b', { fair: true });
    const rwFence = await writeLock(rw, 'tok-w');
    await writeLock(rw, 'tok-v', { queued: {} });
    const keys = [m.lock, m.queue, m.waiters, rw.lock, rw.writers, rw.queue, rw.waiters];
    expect(await server.admin.exists(...keys)).toBe(7);

    expect(await forceUnlock(m, rw)).toBe(2);

    expect(await server.admin.exists(...keys)).toBe(0);
    expect(await server.admin.get(m.fence)).toBe(String(mutexFence));
    expect(await server.admin.get(rw.fence)).toBe(String(rwFence));
    expect(await mutexChannel.take()).toEqual(['r']);
    expect(await rwChannel.take()).toEqual(['a']);
  });

  it('only one lock held: returns 1 (mutex, then read/write)', async () => {
    const { m, rw } = fresh('force-one');
    await acquire(m, 'tok-a');
    expect(await forceUnlock(m, rw)).toBe(1);
    expect(await server.admin.exists(m.lock)).toBe(0);

    await readLock(rw, 'tok-r');
    expect(await forceUnlock(m, rw)).toBe(1);
    expect(await server.admin.exists(rw.lock)).toBe(0);
  });

  it('nothing held: returns 0, still clears the queues and wakes every waiter', async () => {
    const { m, rw } = fresh('force-none');
    const mutexChannel = await listen(m.channel);
    const rwChannel = await listen(rw.channel);
    const far = (await clock()).ms + 60_000;
    await queueWaiter(m, 'tok-x', 1, `${far}|250|w-x|ib|1|inst-x`);
    await server.admin.zadd(rw.writers, far, 'tok-w');

    expect(await forceUnlock(m, rw)).toBe(0);

    expect(await server.admin.exists(m.queue, m.waiters, rw.writers)).toBe(0);
    expect(await mutexChannel.take()).toEqual(['r']);
    expect(await rwChannel.take()).toEqual(['a']);
  });

  it("publishes with the command ARGV[1] names ('spublish')", async () => {
    const { m, rw } = fresh('force-spublish');
    const mutexChannel = await listen(m.channel, true);
    const rwChannel = await listen(rw.channel, true);
    const plain = await listen(m.channel);

    expect(await forceUnlock(m, rw, 'spublish')).toBe(0);

    expect(await mutexChannel.take()).toEqual(['r']);
    expect(await rwChannel.take()).toEqual(['a']);
    expect(await plain.take()).toEqual([]);
  });
});

describe('fence-mint.lua', () => {
  const mint = async (m: MKeys, token: string): Promise<number> =>
    Number(await run(FENCE_MINT, [m.lock, m.fence], [token]));

  it('mints the holder of a plain grant a token from the server clock, into the counter and the lock, TTL kept', async () => {
    const { m } = fresh('mint-own');
    await server.admin.set(m.lock, 'tok-a||inst-a', 'PX', 30_000);
    const before = await clock();
    const token = await mint(m, 'tok-a');
    const after = await clock();
    expectWithin(token, before.us, after.us);
    expect(await server.admin.get(m.fence)).toBe(String(token));
    await expectPttlNear(m.fence, 60_000);
    expect(await server.admin.get(m.lock)).toBe(`tok-a|${token}|inst-a`);
    await expectPttlNear(m.lock, 30_000);
    // A second read mints nothing new: the same token, the counter unmoved.
    expect(await mint(m, 'tok-a')).toBe(token);
    expect(await server.admin.get(m.fence)).toBe(String(token));
  });

  it('keeps the waited-for mark, and rises past a counter a later holder finds', async () => {
    const { m } = fresh('mint-rise');
    await server.admin.set(m.lock, 'tok-a||inst-a|w', 'PX', 30_000);
    const first = await mint(m, 'tok-a');
    expect(await server.admin.get(m.lock)).toBe(`tok-a|${first}|inst-a|w`);
    await server.admin.set(m.lock, 'tok-b||inst-b', 'PX', 30_000);
    expect(await mint(m, 'tok-b')).toBeGreaterThan(first);
  });

  it('seeds past a counter an older version left (small, no TTL)', async () => {
    const { m } = fresh('mint-legacy');
    await server.admin.set(m.lock, 'tok-a||inst-a', 'PX', 30_000);
    await server.admin.set(m.fence, '1');
    const before = await clock();
    expect(await mint(m, 'tok-a')).toBeGreaterThanOrEqual(before.us);
    await expectPttlNear(m.fence, 60_000);
  });

  it('answers 0 and writes nothing for a caller that does not hold the lock, or when there is no lock', async () => {
    const { m } = fresh('mint-other');
    await server.admin.set(m.lock, 'tok-a||inst-a', 'PX', 30_000);
    expect(await mint(m, 'tok-b')).toBe(0);
    // A token that is a prefix of the holder's is not the holder.
    expect(await mint(m, 'tok')).toBe(0);
    expect(await server.admin.exists(m.fence)).toBe(0);
    expect(await server.admin.get(m.lock)).toBe('tok-a||inst-a');
    await server.admin.del(m.lock);
    expect(await mint(m, 'tok-a')).toBe(0);
    expect(await server.admin.exists(m.fence, m.lock)).toBe(0);
  });
});

describe('release-plain.lua', () => {
  const releasePlain = async (m: MKeys, token: string): Promise<number> =>
    (await run(RELEASE_PLAIN, [m.lock], [token])) as number;

  it("deletes its owner's lock when nobody waited, and publishes nothing", async () => {
    const { m } = fresh('plain-own');
    const channel = await listen(m.channel);
    await server.admin.set(m.lock, 'tok-a||inst-a', 'PX', 30_000);
    expect(await releasePlain(m, 'tok-a')).toBe(1);
    expect(await server.admin.exists(m.lock)).toBe(0);
    expect(await channel.take()).toEqual([]);
  });

  it("answers 0 for another's lock or none, and 2, touching nothing, for a lock someone waited for", async () => {
    const { m } = fresh('plain-other');
    await server.admin.set(m.lock, 'tok-a|5|inst-a|w', 'PX', 30_000);
    expect(await releasePlain(m, 'tok-b')).toBe(0);
    // A token that is a prefix of the owner's is not the owner.
    expect(await releasePlain(m, 'tok')).toBe(0);
    expect(await releasePlain(m, 'tok-a')).toBe(2);
    expect(await server.admin.get(m.lock)).toBe('tok-a|5|inst-a|w');
    await server.admin.del(m.lock);
    expect(await releasePlain(m, 'tok-a')).toBe(0);
  });
});

describe('release-plain.lua with several locks (the releases of one event-loop turn, one server)', () => {
  it("answers each lock in order: its owner's released, another's kept, one waited for left to release.lua", async () => {
    const a = fresh('rel-many-a').m;
    const b = fresh('rel-many-b').m;
    const c = fresh('rel-many-c').m;
    const channel = await listen(c.channel);
    await holdMutex(a, 'tok-a', '', 'inst-a', 30_000);
    await holdMutex(b, 'tok-other', '', 'inst-b', 30_000);
    await holdMutex(c, 'tok-c', '7', 'inst-c', 30_000, true);
    expect(await run(RELEASE_PLAIN, [a.lock, b.lock, c.lock], ['tok-a', 'tok-b', 'tok-c'])).toEqual([1, 0, 2]);
    expect(await server.admin.exists(a.lock)).toBe(0);
    expect(await server.admin.get(b.lock)).toBe('tok-other||inst-b');
    expect(await server.admin.get(c.lock)).toBe('tok-c|7|inst-c|w');
    expect(await channel.take()).toEqual([]);
  });
});

describe('fence-raise.lua', () => {
  it('not the owner (or no lock): returns 0 and writes nothing', async () => {
    const { m } = fresh('fence-not-owner');
    expect(await fenceRaise(m, 'tok-a', '1700000000000500')).toBe(0);
    expect(await server.admin.exists(m.lock, m.fence)).toBe(0);

    await holdMutex(m, 'tok-z', '10', 'inst-z', 30_000);
    await server.admin.set(m.fence, '10');
    expect(await fenceRaise(m, 'tok-a', '1700000000000500')).toBe(0);
    expect(await mutexRecord(m.lock)).toEqual({ o: 'tok-z', f: '10', i: 'inst-z', w: false });
    expect(await server.admin.get(m.fence)).toBe('10');
  });

  it('the owner, counter lower: lifts the counter to ARGV[2] exactly as sent, and records it as f', async () => {
    const { m } = fresh('fence-raise');
    await holdMutex(m, 'tok-a', '10', 'inst-a', 30_000);
    await server.admin.set(m.fence, '10');

    expect(await fenceRaise(m, 'tok-a', '1700000000000500')).toBe(1);

    expect(await server.admin.get(m.fence)).toBe('1700000000000500');
    expect(await mutexRecord(m.lock)).toEqual({ o: 'tok-a', f: '1700000000000500', i: 'inst-a', w: false });
    await expectPttlNear(m.lock, 30_000);
  });

  it('the owner, no counter: creates it', async () => {
    const { m } = fresh('fence-missing');
    await holdMutex(m, 'tok-a', '10', 'inst-a', 30_000);
    expect(await fenceRaise(m, 'tok-a', '1700000000000500')).toBe(1);
    expect(await server.admin.get(m.fence)).toBe('1700000000000500');
  });

  it('the owner, counter higher: leaves the counter, still records the token as f', async () => {
    const { m } = fresh('fence-higher');
    await holdMutex(m, 'tok-a', '10', 'inst-a', 30_000);
    await server.admin.set(m.fence, '1700000000000900');

    expect(await fenceRaise(m, 'tok-a', '1700000000000500')).toBe(1);

    expect(await server.admin.get(m.fence)).toBe('1700000000000900');
    expect((await mutexRecord(m.lock))?.f).toBe('1700000000000500');
  });

  it('the owner, counter equal (numerically): the counter is not written', async () => {
    const { m } = fresh('fence-equal');
    await holdMutex(m, 'tok-a', '10', 'inst-a', 30_000);
    // Spelled differently, so a SET of the same number would show.
    await server.admin.set(m.fence, '0042');

    expect(await fenceRaise(m, 'tok-a', '42')).toBe(1);

    expect(await server.admin.get(m.fence)).toBe('0042');
    expect((await mutexRecord(m.lock))?.f).toBe('42');
  });
});
