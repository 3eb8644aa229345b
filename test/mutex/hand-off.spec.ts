// The hand-off between processes: a release of a lock others wait for hands it, inside the
// release script, to the oldest waiting process, tells that process alone, and the new holder
// starts with no call to confirm it. Watched from outside the library: a client of the test's
// own subscribed to every channel of the lock, and Redis's own command counts.
import type { LockEngine, LockHandle } from 'lockwarden/core';
import { workersForFile } from '../harness/child';
import type { ChildScript } from '../harness/child';
import { closersForFile } from '../harness/cleanup';
import { callsOf } from '../harness/command-stats';
import { engineFactory } from '../harness/engines';
import { EventLog } from '../harness/event-log';
import { handOffs } from '../harness/hand-off';
import { redisForFile, uniquePrefix } from '../harness/redis';

// Its own server: the command counts below are the lock's alone.
const server = redisForFile({ own: true });
const worker = workersForFile();
const { engine } = engineFactory(() => server.redis.url, 'handoff');
const { twoEngines, handOff } = handOffs(engine);
const closers = closersForFile();

/** How many script calls (EVALSHA) the server has run so far, by its own count. */
const scriptCalls = (): Promise<number> => callsOf(server.admin, 'evalsha');

/** Waits until `check` holds, looking again each few milliseconds (it observes other processes). */
async function until(check: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** Every message published on `channel` and on the channels under it (its inboxes), as heard. */
async function overhear(channel: string): Promise<{ channel: string; message: string }[]> {
  const heard: { channel: string; message: string }[] = [];
  const listener = server.redis.client();
  closers.push(() => listener.disconnect());
  listener.on('pmessage', (_pattern: string, on: string, message: string) => heard.push({ channel: on, message }));
  await listener.psubscribe(`${channel}*`);
  return heard;
}

/**
 * One process per entry of `kinds` (a lock-worker's KIND: undefined for a mutex) waiting for
 * `k` under `PREFIX`, each in the queue (`queued(n)` holds with n of them there) before the
 * next starts. Leases and places long enough that no renewal of theirs falls in a test.
 */
async function queuedWorkers(
  PREFIX: string,
  kinds: readonly (string | undefined)[],
  queued: (n: number) => Promise<boolean>,
): Promise<ChildScript[]> {
  const workers: ChildScript[] = [];
  for (const [i, kind] of kinds.entries()) {
    const w = worker('lock-worker', {
      REDIS: server.redis.url,
      PREFIX,
      MODE: 'wait-hold',
      ...(kind ? { KIND: kind } : {}),
      NAME: `w${i}`,
      LEASE_MS: '120000',
      PLACE_MS: '600000',
    });
    workers.push(w);
    await w.waitFor(/^waiting$/);
    await until(() => queued(i + 1));
  }
  return workers;
}

describe('a release others wait for, between processes', () => {
  it('hands the lock to the oldest waiting process, tells that process alone, and costs it no call', async () => {
    const PREFIX = uniquePrefix('handoff');
    const channel = `${PREFIX}{k}:released`;
    const heard = await overhear(channel);

    const holderEngine = engine({ keyPrefix: PREFIX });
    const holder = await holderEngine.acquire('k');
    const holderToken = await holder.fencingToken();

    // Three processes queue one after another.
    const queued = async (n: number): Promise<boolean> => (await holderEngine.inspect('k')).waiters === n;
    const workers = await queuedWorkers(PREFIX, [undefined, undefined, undefined], queued);

    const tokens = [holderToken];
    let release: () => Promise<unknown> = () => holder.release();
    for (let i = 0; i < 3; i++) {
      const before = await scriptCalls();
      // Whichever of those still waiting gets it first.
      const waiting = workers.slice(i);
      const next = Promise.race(
        waiting.map((w, j) => w.waitFor(/^acquired (\d+) (\w+)$/).then((m) => ({ j: i + j, m }))),
      );
      await release();
      const { j, m } = await next;
      // The oldest waiter got it, as a hand-off.
      expect(j).toBe(i);
      expect(m[2]).toBe('true');
      // The new holder sent no call. The first releaser took its lock uncontended: its
      // release-plain.lua found it waited for, then its release.lua handed it off. A holder
      // that was handed its lock knows others wait, and sends release.lua at once.
      expect((await scriptCalls()) - before).toBe(i === 0 ? 2 : 1);
      tokens.push(Number(m[1]));
      const name = `w${i}`;
      release = () => server.admin.rpush(`${PREFIX}go:${name}`, 'go');
    }
    await release();
    await Promise.all(workers.map((w) => w.succeeded()));

    // Tokens rose with each hand-off.
    expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
    expect(new Set(tokens).size).toBe(4);
    // Each hand-off was one message, on the inbox of the process it went to: three inboxes.
    // The lock's own channel heard only the last release, which found nobody queued.
    await until(() => heard.length >= 4);
    const grants = heard.filter((h) => h.channel !== channel);
    expect(grants).toHaveLength(3);
    expect(new Set(grants.map((g) => g.channel)).size).toBe(3);
    for (const [i, g] of grants.entries()) {
      expect(g.channel).toMatch(new RegExp(`^${channel.replace(/[{}]/g, '\\$&')}:[0-9a-f]{12}$`));
      expect(g.message).toMatch(new RegExp(`^g[0-9a-f]+:${tokens[i + 1]}:120000:\\d+$`));
    }
    expect(heard.filter((h) => h.channel === channel).map((h) => h.message)).toEqual(['r']);
  });

  it('hands a write lock to the oldest waiting writer, then the readers queued behind it together, telling only their processes, at no call of theirs', async () => {
    const PREFIX = uniquePrefix('handoff-rw');
    const channel = `${PREFIX}{k}:rw:released`;
    const heard = await overhear(channel);

    const holderEngine = engine({ keyPrefix: PREFIX });
    const holder = await holderEngine.acquireWrite('k');
    const holderToken = await holder.fencingToken();

    // A writer, then two readers, each in its own process, queue in that order (the readers
    // behind the writer: writer preference).
    const queued = async (n: number): Promise<boolean> => (await server.admin.zcard(`${PREFIX}{k}:rw:queue`)) === n;
    const workers = await queuedWorkers(PREFIX, ['write', 'read', 'read'], queued);
    const acquired = workers.map((w) => w.waitFor(/^acquired (\d+) (\w+)$/));
    let calls = await scriptCalls();

    await holder.release();
    const first = await Promise.race(acquired.map((got, i) => got.then((m) => ({ i, m }))));
    // The writer first, handed the lock, and the readers still wait behind it.
    expect(first.i).toBe(0);
    const writer = first.m;
    expect(writer[2]).toBe('true');
    expect(Number(writer[1])).toBeGreaterThan(holderToken);
    expect(workers[1].lines.some((l) => l.startsWith('acquired'))).toBe(false);
    expect((await scriptCalls()) - calls).toBe(1); // the release; the new holder sent none

    calls = await scriptCalls();
    await server.admin.rpush(`${PREFIX}go:w0`, 'go');
    const readers = await Promise.all(acquired.slice(1));
    // Both readers together, each handed its read lease, with the writer's token.
    for (const r of readers) expect([r[1], r[2]]).toEqual([writer[1], 'true']);
    expect((await scriptCalls()) - calls).toBe(1);

    await server.admin.rpush(`${PREFIX}go:w1`, 'go');
    await server.admin.rpush(`${PREFIX}go:w2`, 'go');
    await Promise.all(workers.map((w) => w.succeeded()));
    // Three grants, each one message on the inbox of the process it went to; the lock's own
    // channel heard nothing (readers leaving with nobody waiting wake nobody).
    await until(() => heard.length >= 3);
    expect(new Set(heard.map((h) => h.channel)).size).toBe(3);
    for (const h of heard) {
      expect(h.channel).toMatch(new RegExp(`^${channel.replace(/[{}]/g, '\\$&')}:[0-9a-f]{12}$`));
      expect(h.message).toMatch(new RegExp(`^g[0-9a-f]+:${writer[1]}:120000:\\d+$`));
    }
  });

  it("counts a handed-off lock's hold from when its holder had it, not from the attempt its lease is timed from", async () => {
    // The waiter's last attempt went out before a 200 ms pause; its lease counts from then,
    // its hold from when the hand-off reached it.
    const pause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 200));
    const { events, lock } = await handOff('handoff-held', 'h', {}, {}, pause);
    const heldFrom = performance.now();
    await lock.release();
    const heldFor = performance.now() - heldFrom;
    const released = events.events.find((e) => e.type === 'released' && e.key === 'h');
    // Half the pause: room for the step from the grant to this test's next line, never for the pause.
    expect(released?.heldMs).toBeLessThan(heldFor + 100);
    // The wait was told under the lock's name, as the release is.
    const waiting = events.events.find((e) => e.type === 'waiting' && e.key === 'h');
    expect(waiting?.name).toBeDefined();
    expect(waiting?.name).toBe(released?.name);
  });

  it('hands released permits to the oldest waiting engines in turn, which hold them with no call', async () => {
    const keyPrefix = uniquePrefix('handoff-permits');
    const events = new EventLog();
    // Places renewed every 3 minutes: only the hand-offs can let the waiters in.
    const make = (log?: EventLog): LockEngine => engine({ keyPrefix, placeMs: 600_000 }, log);
    const [a, b, c] = [make(), make(events), make(events)];
    const held = [
      await a.semaphore('pool', { limit: 2 }).acquire({ leaseMs: 60_000 }),
      await a.semaphore('pool', { limit: 2 }).acquire({ leaseMs: 60_000 }),
    ];
    const waiting: Promise<LockHandle>[] = [];
    for (const e of [b, c]) {
      const parked = events.next({ type: 'waiting', key: 'pool' });
      waiting.push(e.semaphore('pool', { limit: 2 }).acquire({ leaseMs: 60_000, waitMs: 600_000 }));
      await parked;
    }
    for (const [i, h] of held.entries()) {
      const heldToken = await h.fencingToken();
      const before = await scriptCalls();
      await h.release();
      const got = await waiting[i];
      // One call, the releaser's sem-release.lua: the waiter sent none to take its permit.
      expect((await scriptCalls()) - before).toBe(1);
      expect(events.count({ type: 'acquired', key: 'pool', handedOff: true })).toBe(i + 1);
      expect(await got.fencingToken()).toBeGreaterThan(heldToken);
    }
    await Promise.all(waiting.map(async (w) => (await w).release()));
  });

  it('a new caller of an engine that already waits for a semaphore waits in line behind its waiters, asking Redis nothing', async () => {
    const { events, a, b } = twoEngines('handoff-in-line', { placeMs: 600_000 });
    const held = await a.semaphore('s', { limit: 1 }).acquire({ leaseMs: 60_000 });
    const sem = b.semaphore('s', { limit: 1 });
    const order: number[] = [];
    const take = (n: number): Promise<LockHandle> =>
      sem.acquire({ leaseMs: 60_000, waitMs: 600_000 }).then((h) => (order.push(n), h));
    const firstParked = events.next({ type: 'waiting', key: 's' });
    const first = take(1);
    await firstParked;

    const before = await scriptCalls();
    const secondParked = events.next({ type: 'waiting', key: 's' });
    const second = take(2);
    await secondParked;
    // It waits with no attempt of its own: it would find no room, or take the permit from under the first.
    expect((await scriptCalls()) - before).toBe(0);

    await held.release();
    await (await first).release();
    await (await second).release();
    // In line: the first got the permit from the queue, and handed it off to the second.
    expect(order).toEqual([1, 2]);
    expect(events.count({ type: 'acquired', key: 's', handedOff: true })).toBe(2);
  });

  it('callers of an engine that has no place in the queue yet each ask the server: free permits are taken at once', async () => {
    // Places renewed every 3 minutes: a caller that waited in line for nothing would stall the test.
    const { events, a, b } = twoEngines('handoff-not-in-line', { placeMs: 600_000 });
    const sem = b.semaphore('s', { limit: 2 });
    // One contended round, so the engine's channel stays subscribed for the callers below.
    const held = await a.semaphore('s', { limit: 2 }).acquire({ leaseMs: 60_000, permits: 2 });
    const parked = events.next({ type: 'waiting', key: 's' });
    const first = sem.acquire({ leaseMs: 60_000, waitMs: 600_000 });
    await parked;
    await held.release();
    await (await first).release();
    // Two callers at once, two permits free: neither waits behind the other.
    const both = await Promise.all([0, 1].map(() => sem.acquire({ leaseMs: 60_000, waitMs: 600_000 })));
    for (const h of both) expect(await h.release()).toBe(true);
  });

  it("an engine's semaphore waiters share one place, and the next takes it in turn: none is left without one", async () => {
    // Places renewed every 3 minutes: a waiter left without a place would wait that long.
    const { keyPrefix, events, a, b } = twoEngines('handoff-share', { placeMs: 600_000 });
    const holder = await a.semaphore('one', { limit: 1 }).acquire({ leaseMs: 60_000 });
    const sem = b.semaphore('one', { limit: 1 });
    const turns: number[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 3; i++) {
      const parked = events.next({ type: 'waiting', key: 'one' });
      waiters.push(sem.withPermit(() => void turns.push(i), { leaseMs: 60_000, waitMs: 600_000 }));
      await parked;
    }
    // One place on the server for the three: the engine's.
    expect(await server.admin.zcard(`${keyPrefix}{one}:sem:queue`)).toBe(1);
    await holder.release();
    await Promise.all(waiters);
    // Each got its turn (within the engine, a hand-off goes to a parked waiter, so the order
    // there is not promised), and nothing is left queued.
    expect([...turns].sort()).toEqual([0, 1, 2]);
    expect(await server.admin.exists(`${keyPrefix}{one}:sem:queue`, `${keyPrefix}{one}:sem:waiters`)).toBe(0);
  });

  it("when an engine's semaphore waiter holding the engine's place gives up, the next takes the place", async () => {
    // Places renewed every 3 minutes: a waiter left without a place would wait that long.
    const { keyPrefix, events, a, b } = twoEngines('handoff-giveup', { placeMs: 600_000 });
    const holder = await a.semaphore('one', { limit: 1 }).acquire({ leaseMs: 60_000 });
    const sem = b.semaphore('one', { limit: 1 });
    const cancel = new AbortController();
    let parked = events.next({ type: 'waiting', key: 'one' });
    const first = sem.acquire({ waitMs: 600_000, signal: cancel.signal }).catch((err: unknown) => err);
    await parked;
    parked = events.next({ type: 'waiting', key: 'one' });
    const second = sem.acquire({ leaseMs: 60_000, waitMs: 600_000 });
    await parked;
    const queue = `${keyPrefix}{one}:sem:queue`;
    const [placed] = await server.admin.zrange(queue, '0', '-1');
    cancel.abort();
    await first;
    // The second waiter took the engine's place: a new one, the first's withdrawn.
    await until(async () => {
      const now = await server.admin.zrange(queue, '0', '-1');
      return now.length === 1 && now[0] !== placed;
    });
    await holder.release();
    await (await second).release();
  });
});
