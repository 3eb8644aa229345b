// The engine at its edges, in real processes: a waiter paused (SIGSTOP) past its lease, a
// holder paused past its lease, and queued waiters killed (SIGKILL) in default and fair
// modes. Each trial runs on its own key, TRIALS keys per process, so one signal makes
// TRIALS trials. A resource outside the library (a Redis the library never sees) keeps the
// highest fencing token per key and refuses lower ones.
import { Redis } from 'ioredis';
import { LockEngine } from 'lockwarden/core';
import { LockTimeoutError } from 'lockwarden/errors';
import type { LockEngineOptions, LockHandle } from 'lockwarden/core';
import { runWorker } from '../harness/child';
import type { ChildScript } from '../harness/child';
import { EventLog } from '../harness/event-log';
import { redisForFile, uniquePrefix } from '../harness/redis';
import { FencedResource } from '../harness/fenced-resource';
import { closeNow } from '../harness/engines';
import { StallAfterWrite } from '../harness/stall';

const TRIALS = 20;
/** The settle grace (core/wait/acquire-loop.ts): an attempt unanswered this long past its budget fails. */
const GRACE_MS = 250;
/** The longest a release hands a queued waiter the lock before it confirms (see lock-engine.ts). */
const HANDOFF_LEASE_MS = 1_000;
/** How long a waiter keeps its place on the server without checking back (see lock-engine.ts). */
const QUEUE_PLACE_TTL_MS = 1_000;

const server = redisForFile({ own: true });
const observer = redisForFile({ own: true });
const closers: (() => Promise<unknown>)[] = [];
const children: ChildScript[] = [];

afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const close of closers.splice(0).reverse()) await close();
});

function keys(name: string): string[] {
  return Array.from({ length: TRIALS }, (_, i) => `${name}-${i}`);
}

function engine(keyPrefix: string, extra: Partial<ConstructorParameters<typeof LockEngine>[0]> = {}): LockEngine {
  const e = new LockEngine({ redis: server.redis.url, keyPrefix, shutdownGraceMs: 0, ...extra });
  closers.push(() => closeNow(e));
  return e;
}

function worker(env: Record<string, string>): ChildScript {
  const w = runWorker('edge-worker', { REDIS: server.redis.url, OBSERVER: observer.redis.url, ...env });
  children.push(w);
  return w;
}

/** Waits until `check` holds, looking again each few milliseconds (it observes another process). */
async function until(check: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** Waits until the child has printed `n` more heartbeats: proof that it ran that long. */
async function ticks(child: ChildScript, n: number): Promise<void> {
  const seen = child.lines.length;
  await until(() => child.lines.slice(seen).filter((l) => l === 'tick').length >= n);
}

function reported(child: ChildScript, word: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of child.lines) {
    const [w, key, token] = line.split(' ');
    if (w === word) found.set(key, Number(token));
  }
  return found;
}

async function count(prefix: string, what: string, who: string): Promise<number> {
  return Number((await observer.admin.get(`${prefix}${what}:${who}`)) ?? '0');
}

/** Until every key has one waiter with a place in its queue (a mutex's, or a read/write lock's). */
async function queuedOn(prefix: string, ks: readonly string[], write: boolean): Promise<void> {
  const queue = (k: string): string => `${prefix}{${k}}${write ? ':rw' : ''}:queue`;
  await until(async () => (await Promise.all(ks.map((k) => server.admin.zcard(queue(k))))).every((n) => n === 1));
}

describe.each([
  ['a mutex (fair)', false],
  ['a write lock', true],
])('a queued waiter for %s paused past its lease', (_kind, write) => {
  it(`is never handed a stale lock, nor writes while another process holds it (${TRIALS} trials)`, async () => {
    const prefix = uniquePrefix(write ? 'paused-writer' : 'paused-waiter');
    const holder = engine(prefix);
    const other = engine(prefix);
    const take = (e: LockEngine, k: string, waitMs?: number): Promise<LockHandle> =>
      write ? e.acquireWrite(k, { waitMs }) : e.acquire(k, { waitMs });
    const resource = new FencedResource(observer.redis.client(), prefix);
    closers.push(async () => resource.client.disconnect());
    const ks = keys('k');
    const held = await Promise.all(ks.map((k) => take(holder, k)));
    // Its own lease is long (its hand-off lease, 700 ms, is what lapses while it is paused), so the
    // grant it finally gets is still its own when it reads its token on a loaded machine.
    const w = worker({
      PREFIX: prefix,
      MODE: 'wait',
      KEYS: ks.join(','),
      LEASE_MS: '30000',
      FAIR: '1',
      WRITE: write ? '1' : '0',
      NAME: 'waiter',
    });
    await w.waitFor(/^queued$/);
    await queuedOn(prefix, ks, write);

    w.kill('SIGSTOP');
    // Each release hands its lock to the paused waiter; the hand-off lapses unused,
    // and another process takes the lock.
    for (const h of held) await h.release();
    const taken = await Promise.all(ks.map((k) => take(other, k, 10_000)));
    const takenTokens = new Map<string, number>();
    for (const t of taken) takenTokens.set(t.key, await t.fencingToken());
    for (const t of taken) expect(await resource.write(t.key, takenTokens.get(t.key)!, 'other')).toBe(true);
    w.kill('SIGCONT');
    await ticks(w, 20);

    // While the other process holds every key, the resumed waiter got none of them.
    expect(reported(w, 'acquired').size).toBe(0);
    for (const t of taken) await t.release();
    await w.waitFor(/^done$/);
    const got = reported(w, 'acquired');
    for (const t of taken) expect(got.get(t.key)).toBeGreaterThan(takenTokens.get(t.key)!);
    expect(await count(prefix, 'refused', 'waiter')).toBe(0);
    expect(await count(prefix, 'accepted', 'waiter')).toBe(TRIALS);
  });
});

describe('a holder paused past its lease', () => {
  it(`reads its signal as aborted before its first write after resuming (${TRIALS} trials)`, async () => {
    const prefix = uniquePrefix('paused-holder');
    const other = engine(prefix);
    const resource = new FencedResource(observer.redis.client(), prefix);
    closers.push(async () => resource.client.disconnect());
    const ks = keys('k');
    // Seconds of lease: it must stay held while the holder mints its tokens and gets ready.
    const h = worker({ PREFIX: prefix, MODE: 'hold', KEYS: ks.join(','), LEASE_MS: '3000', NAME: 'holder' });
    await h.waitFor(/^ready$/);
    await observer.admin.rpush(`${prefix}go`, 'go');
    await h.waitFor(/^stopping$/); // it stops itself, its next step already due

    const taken = await Promise.all(ks.map((k) => other.acquire(k, { waitMs: 10_000 })));
    for (const t of taken) expect(await resource.write(t.key, await t.fencingToken(), 'other')).toBe(true);
    h.kill('SIGCONT');
    await until(() => ks.every((k) => h.lines.some((l) => l.startsWith(`checked ${k} `))));

    // Every holder read its signal as aborted before its watchdog's timer ran: none wrote with its old token.
    expect(h.lines.filter((l) => l.startsWith('checked') && l.endsWith(' live'))).toEqual([]);
    expect(await count(prefix, 'refused', 'holder')).toBe(0);
    expect(await count(prefix, 'accepted', 'holder')).toBe(TRIALS);
    for (const t of taken) await t.release();
  });
});

describe.each([
  ['default', false, false],
  ['fair', true, false],
  ['write lock', false, true],
])('queued waiters killed (%s)', (mode, fair, write) => {
  it(`cost the live waiters at most the ${HANDOFF_LEASE_MS} ms hand-off lease (${TRIALS} kills)`, async () => {
    const prefix = uniquePrefix(`dead-waiter-${mode}`);
    const holder = engine(prefix, { instanceId: 'holder' });
    const liveEvents = new EventLog();
    const live = engine(prefix, { instanceId: 'live', onEvent: liveEvents.listener });
    const ks = keys('k');
    const held = new Map<string, LockHandle>();
    for (const k of ks) held.set(k, await (write ? holder.acquireWrite(k) : holder.acquire(k)));

    const d = worker({
      PREFIX: prefix,
      MODE: 'wait',
      KEYS: ks.join(','),
      LEASE_MS: '30000',
      FAIR: fair ? '1' : '0',
      WRITE: write ? '1' : '0',
      NAME: 'dead',
    });
    await d.waitFor(/^queued$/);
    if (write) {
      await queuedOn(prefix, ks, true);
    } else if (!fair) {
      // A default-mode waiter joins the queue once it has waited a while and still found the
      // lock held: wake it with a spurious release message until it has.
      for (const k of ks) {
        while ((await holder.inspect(k)).waiters === 0) {
          await server.admin.publish(`${prefix}{${k}}:released`, 'r');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      }
    }
    await queuedOn(prefix, ks, write);
    d.kill('SIGKILL');
    await d.exited;

    const waiting = liveEvents.next({ type: 'waiting' }, TRIALS);
    const acquiredAt = new Map<string, number>();
    const liveDone = ks.map(async (k) => {
      const lock = await (write ? live.acquireWrite(k, { waitMs: 30_000 }) : live.acquire(k, { waitMs: 30_000, fair }));
      acquiredAt.set(k, performance.now());
      await lock.release();
    });
    await waiting;
    const releasedAt = new Map<string, number>();
    const handedToDead: number[] = [];
    for (const k of ks) {
      releasedAt.set(k, performance.now());
      await held.get(k)!.release();
      const info = await holder.inspect(k);
      if (info.holders[0]?.instanceId === 'dead') handedToDead.push(info.leaseLeftMs ?? Infinity);
    }
    await Promise.all(liveDone);

    // The bound, as the server enforces it: a dead waiter is handed the lock for at most the
    // hand-off lease, and keeps a queue place for at most as long.
    for (const ttl of handedToDead) expect(ttl).toBeLessThanOrEqual(HANDOFF_LEASE_MS);
    const stalls = ks.map((k) => acquiredAt.get(k)! - releasedAt.get(k)!).sort((x, y) => x - y);
    console.log(
      `${mode} mode: ${TRIALS} dead queued waiters, ${handedToDead.length} handed the lock after they died; ` +
        `next acquisition after the release: p50 ${Math.round(stalls[TRIALS >> 1])} ms, max ${Math.round(stalls[TRIALS - 1])} ms`,
    );
    expect(acquiredAt.size).toBe(TRIALS);
  });
});

describe('waiting writers killed', () => {
  it(`hold new readers back for at most their ${QUEUE_PLACE_TTL_MS} ms place (${TRIALS} kills)`, async () => {
    const prefix = uniquePrefix('dead-writer');
    const holder = engine(prefix);
    const reader = engine(prefix);
    const ks = keys('k');
    const held = await Promise.all(ks.map((k) => holder.acquireRead(k)));
    const d = worker({ PREFIX: prefix, MODE: 'wait', KEYS: ks.join(','), WRITE: '1', NAME: 'dead-writer' });
    await d.waitFor(/^queued$/);
    await until(async () =>
      (await Promise.all(ks.map((k) => server.admin.zcard(`${prefix}{${k}}:rw:writers`)))).every((n) => n === 1),
    );
    d.kill('SIGKILL');
    await d.exited;

    // The bound, as the server keeps it: the dead writer's place ends within its place TTL.
    const [seconds, micros] = await server.admin.time();
    const nowMs = Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000);
    for (const k of ks) {
      const [, deadline] = await server.admin.zrange(`${prefix}{${k}}:rw:writers`, '0', '0', 'WITHSCORES');
      expect(Number(deadline) - nowMs).toBeLessThanOrEqual(QUEUE_PLACE_TTL_MS);
    }
    // Until then new readers queue behind it (writer preference); then they get in.
    const started = performance.now();
    const reads = await Promise.all(ks.map((k) => reader.acquireRead(k, { waitMs: 30_000 })));
    console.log(`dead waiting writers held ${TRIALS} readers back ${Math.round(performance.now() - started)} ms`);
    for (const r of [...reads, ...held]) await r.release();
  });
});

/**
 * A warm engine on a client of its own, whose process stalls for `ms` right after the next of
 * `commands` is written once the stall is armed (see StallAfterWrite).
 */
async function stallingEngine(
  commands: string[],
  ms: number,
  options: Partial<LockEngineOptions> = {},
): Promise<{ e: LockEngine; stall: StallAfterWrite }> {
  const client = new Redis(server.redis.url);
  closers.push(async () => client.disconnect());
  const stall = new StallAfterWrite(client, commands, ms);
  const e = new LockEngine({ client, keyPrefix: uniquePrefix('stall'), shutdownGraceMs: 0, ...options });
  closers.push(() => closeNow(e));
  await (await e.acquire('warm', { waitMs: 0 })).release();
  return { e, stall };
}

describe('an acquire whose process stalls past the settle grace', () => {
  // Node runs expired timers before it reads sockets: after a stall, the grace's timer would
  // call the attempt unanswered while Redis' answer sits unread.
  it.each([
    ['free', false],
    ['busy', true],
  ])('hears what Redis answered meanwhile when the lock is %s, not "Redis did not answer"', async (_, busy) => {
    // Right after the acquire's call is written, the process stalls past the grace.
    const { e, stall } = await stallingEngine(['set', 'evalsha'], 2 * GRACE_MS);
    const holder = busy ? await engine(e.options.keyPrefix).acquire('k') : undefined;
    stall.arm();
    const attempt = e.acquire('k', { waitMs: 0 });
    if (busy) {
      await expect(attempt).rejects.toBeInstanceOf(LockTimeoutError);
      await holder!.release();
    } else {
      const lock = await attempt;
      expect(lock.isHeld()).toBe(true);
      await lock.release();
    }
    expect(stall.happened).toBe(true);
  });
});

describe('health() whose process stalls past its bound', () => {
  it('reports what Redis answered meanwhile, not "no answer"', async () => {
    const timeoutMs = 200;
    // Right after the probe's PING is written, the process is busy past the whole bound.
    const { e, stall } = await stallingEngine(['ping'], 2 * timeoutMs);
    stall.arm();
    const report = await e.health(timeoutMs);
    expect(stall.happened).toBe(true);
    expect(report).toMatchObject({ reachable: true, serversUp: 1 });
    expect(report.error).toBeUndefined();
  });
});

describe("a holder's call whose process stalls past commandTimeoutMs", () => {
  it('hears the release Redis answered meanwhile, not "Redis did not answer"', async () => {
    const commandTimeoutMs = 200;
    // Right after the release's script call is written, the process is busy past the budget.
    const { e, stall } = await stallingEngine(['evalsha'], 2 * commandTimeoutMs, { commandTimeoutMs });
    const lock = await e.acquire('k', { waitMs: 0 });
    stall.arm();
    await expect(lock.release()).resolves.toBe(true);
    expect(stall.happened).toBe(true);
    expect(await server.admin.exists(`${e.options.keyPrefix}{k}`)).toBe(0);
  });
});
