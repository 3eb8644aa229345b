// A mutex handed off within its process: a release that finds a waiter of its own engine
// parked for the lock hands the lock straight off to it, in one script, while waiters of other
// engines keep their places in the queue and get the lock once the engine has handed it off
// MAX_MUTEX_HANDOFFS times in a row. Watched from outside the library: the server's own command
// counts and the lock's key.
import { LockLostError, LockTimeoutError } from 'lockwarden/errors';
import type { LockEngine, LockHandle } from 'lockwarden/core';
import { MAX_MUTEX_HANDOFFS, MAX_MUTEX_HANDOFFS_MS } from '../../libs/lockwarden/src/core/mutex/mutex-lease';
import { callsOf, commandCalls } from '../harness/command-stats';
import { engineFactory } from '../harness/engines';
import { aborted, EventLog } from '../harness/event-log';
import { redisForFile } from '../harness/redis';

// Its own server: the command counts below are the lock's alone.
const server = redisForFile({ own: true });
const { engine, pair } = engineFactory(() => server.redis.url, 'here');

/** Every command the server has run so far, summed: a wait that asks Redis anything moves it. */
async function allCalls(): Promise<number> {
  let sum = 0;
  for (const [command, n] of await commandCalls(server.admin)) if (command !== 'info') sum += n;
  return sum;
}

/** Waits until `check` holds, looking again each few milliseconds (it observes the server). */
async function until(check: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 5));
}

/**
 * An engine whose waiters listen for `key` already: one waiter took its place and was handed
 * the lock off, so the engine knows from now on when it holds it. Returns the handle that holds it.
 */
async function warmHolder(e: LockEngine, events: EventLog, key: string, options = {}): Promise<LockHandle> {
  const first = await e.acquire(key, options);
  const parked = events.next({ type: 'waiting', key });
  const second = e.acquire(key, { waitMs: 60_000, ...options });
  await parked;
  await first.release();
  return second;
}

describe('a release with a waiter of its own engine parked', () => {
  it('hands the lock off to it in one script call, with a fencing token above the last', async () => {
    const events = new EventLog();
    const e = engine({}, events);
    const first = await e.acquire('k');
    const firstToken = await first.fencingToken();
    const parked = events.next({ type: 'waiting', key: 'k' });
    const waiting = e.acquire('k', { waitMs: 60_000 });
    await parked;
    const before = await commandCalls(server.admin);
    await first.release();
    const second = await waiting;
    // The release was the hand-off: one script, no message, and the waiter asked Redis nothing.
    const after = await commandCalls(server.admin);
    const grew = (command: string): number => (after.get(command) ?? 0) - (before.get(command) ?? 0);
    expect(grew('evalsha')).toBe(1);
    expect(grew('publish') + grew('subscribe') + grew('pexpire')).toBe(0);
    expect(events.events.filter((ev) => ev.type === 'acquired' && ev.handedOff)).toHaveLength(1);
    const secondToken = await second.fencingToken();
    expect(secondToken).toBeGreaterThan(firstToken);
    // The key is the new holder's, with its full lease: the waiter took nothing else with it.
    expect((await e.inspect('k')).waiters).toBe(0);
    expect(await server.admin.pttl(`${e.options.keyPrefix}{k}`)).toBeGreaterThan(e.options.leaseMs / 2);
    await second.release();
    expect(await server.admin.exists(`${e.options.keyPrefix}{k}`)).toBe(0);
  });

  it('mints the token at the hand-off for a fenced waiter', async () => {
    const events = new EventLog();
    const e = engine({}, events);
    const first = await e.acquire('f', { fenced: true });
    const firstToken = await first.fencingToken();
    const parked = events.next({ type: 'waiting', key: 'f' });
    const waiting = e.acquire('f', { waitMs: 60_000, fenced: true });
    await parked;
    await first.release();
    const second = await waiting;
    // Minted already: reading it asks Redis nothing.
    const scripts = await callsOf(server.admin, 'evalsha');
    expect(await second.fencingToken()).toBeGreaterThan(firstToken);
    expect(await callsOf(server.admin, 'evalsha')).toBe(scripts);
    await second.release();
  });

  it('lets a new caller of the engine wait in line while the lock is held here, asking Redis nothing', async () => {
    const events = new EventLog();
    const e = engine({}, events);
    const held = await warmHolder(e, events, 'line');
    const all = await allCalls();
    const parked = events.next({ type: 'waiting', key: 'line' });
    const next = e.acquire('line', { waitMs: 60_000 });
    await parked;
    expect(await allCalls()).toBe(all);
    expect((await e.inspect('line')).waiters).toBe(0);
    await held.release();
    await (await next).release();
  });

  it('a waiter in line that gives up leaves nothing behind', async () => {
    const events = new EventLog();
    const e = engine({}, events);
    const held = await warmHolder(e, events, 'gives-up');
    await expect(e.acquire('gives-up', { waitMs: 100 })).rejects.toBeInstanceOf(LockTimeoutError);
    await held.release();
    expect(await server.admin.keys(`${e.options.keyPrefix}{gives-up}*`)).not.toContain(
      `${e.options.keyPrefix}{gives-up}`,
    );
    expect((await e.inspect('gives-up')).held).toBe(false);
  });

  it('does not hand off a lock it no longer holds: the waiter asks Redis, and gets it there', async () => {
    const events = new EventLog();
    const e = engine({}, events);
    const held = await warmHolder(e, events, 'gone', { leaseMs: 60_000, renew: false });
    const parked = events.next({ type: 'waiting', key: 'gone' });
    const next = e.acquire('gone', { waitMs: 60_000 });
    await parked;
    await server.admin.del(`${e.options.keyPrefix}{gone}`);
    // Not ours to hand off: the release says so, and the waiter takes the lock by its own attempt.
    expect(await held.release()).toBe(false);
    const got = await next;
    expect(got.isHeld()).toBe(true);
    expect(await server.admin.get(`${e.options.keyPrefix}{gone}`)).not.toBeNull();
    await got.release();
  });

  it('wakes a waiter in line when the hold here is lost, while the lost holder still runs', async () => {
    const events = new EventLog();
    const e = engine({}, events);
    const held = await warmHolder(e, events, 'lost', { leaseMs: 600 });
    const parked = events.next({ type: 'waiting', key: 'lost' });
    // Its lease, and so its check back while in line, outlasts the test: only the end of the
    // hold here can wake it.
    const next = e.acquire('lost', { waitMs: 600_000, leaseMs: 600_000 });
    await parked;
    await server.admin.del(`${e.options.keyPrefix}{lost}`);
    // The watchdog finds the key gone and tells the holder; the waiter in line then asks Redis.
    expect(await aborted(held.signal)).toBeInstanceOf(LockLostError);
    const got = await next;
    expect(held.isHeld()).toBe(false);
    expect(got.isHeld()).toBe(true);
    await got.release();
    await held.release();
  });
});

describe('hand-offs within an engine, beside waiters of other engines', () => {
  it(`gives the lock to another engine's waiter once it handed it off ${MAX_MUTEX_HANDOFFS} times in a row`, async () => {
    const events = new EventLog();
    const [a, b] = pair({}, events);
    let stop = false;
    let grantsOfA = 0;
    const loop = async (): Promise<void> => {
      while (!stop) {
        const lock = await a.acquire('turns', { waitMs: 60_000 });
        grantsOfA++;
        await new Promise((resolve) => setImmediate(resolve));
        await lock.release();
      }
    };
    const flows = [loop(), loop(), loop()];
    // The engine hands the lock off among its flows before the other engine asks.
    await until(() => events.count({ type: 'acquired', key: 'turns', handedOff: true }) > MAX_MUTEX_HANDOFFS * 2);
    const fromB = b.acquire('turns', { waitMs: 60_000 });
    // Counted from when b's waiter holds its place: a's flows wait in line, with none.
    await until(async () => (await b.inspect('turns')).waiters === 1);
    const before = grantsOfA;
    const lock = await fromB;
    const grantsMeanwhile = grantsOfA - before;
    stop = true;
    await lock.release();
    await Promise.all(flows);
    // The holder when b queued, and at most MAX_MUTEX_HANDOFFS hand-offs after it.
    expect(grantsMeanwhile).toBeLessThanOrEqual(MAX_MUTEX_HANDOFFS + 1);
  });

  it('keeps handing the lock off within the engine past the limit while no other engine waits', async () => {
    const events = new EventLog();
    const e = engine({}, events);
    let stop = false;
    const loop = async (): Promise<void> => {
      while (!stop) {
        const lock = await e.acquire('alone', { waitMs: 60_000 });
        await new Promise((resolve) => setImmediate(resolve));
        await lock.release();
      }
    };
    const flows = [loop(), loop(), loop()];
    await until(() => events.count({ type: 'acquired', key: 'alone', handedOff: true }) > 0);
    const [publishes, from] = [await callsOf(server.admin, 'publish'), events.mark()];
    // Well past MAX_MUTEX_HANDOFFS in a row, and past MAX_MUTEX_HANDOFFS_MS.
    await events.since(from, { type: 'acquired', key: 'alone' }, MAX_MUTEX_HANDOFFS * 4);
    await new Promise((resolve) => setTimeout(resolve, MAX_MUTEX_HANDOFFS_MS * 2));
    // No release went to the queue meanwhile: nothing was published.
    const publishedMeanwhile = (await callsOf(server.admin, 'publish')) - publishes;
    const grants = events.events.slice(from).filter((ev) => ev.type === 'acquired');
    stop = true;
    await Promise.all(flows);
    expect(publishedMeanwhile).toBe(0);
    // Each grant was a hand-off here.
    expect(grants.filter((ev) => !('handedOff' in ev && ev.handedOff))).toEqual([]);
  });

  it('never hands a fair lock off within the engine: the oldest place goes first', async () => {
    const events = new EventLog();
    const [a, b] = pair({}, events);
    const holder = await a.acquire('fair', { fair: true });
    const order: string[] = [];
    const wait = async (e: LockEngine, name: string): Promise<{ done: Promise<void> }> => {
      const parked = events.next({ type: 'waiting', key: 'fair' });
      const done = e.acquire('fair', { fair: true, waitMs: 60_000 }).then(async (lock) => {
        order.push(name);
        await lock.release();
      });
      await parked;
      return { done };
    };
    const other = await wait(b, 'other engine');
    await until(async () => (await a.inspect('fair')).waiters === 1);
    const own = await wait(a, 'own engine');
    await until(async () => (await a.inspect('fair')).waiters === 2);
    await holder.release();
    await Promise.all([other.done, own.done]);
    expect(order).toEqual(['other engine', 'own engine']);
  });
});
