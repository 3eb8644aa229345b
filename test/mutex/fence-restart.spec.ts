import type { Redis } from 'ioredis';
import { LockEngine } from 'lockwarden/core';
import type { LockHandle } from 'lockwarden/core';
import { MemoryLockBackend } from 'lockwarden/testing';
import { EventLog } from '../harness/event-log';
import { callsOf } from '../harness/command-stats';
import { closersForFile } from '../harness/cleanup';
import { closeNow, engineFactory } from '../harness/engines';
import { redisForFile, uniquePrefix } from '../harness/redis';

/**
 * Fencing tokens across a Redis restart without persistence. The restart wipes the
 * per-key counters; a resource that keeps the highest token it has seen must still accept
 * every holder that comes after it, or it refuses all of them until the new counter catches
 * up with the old one.
 */
// Its own server: the tests restart it.
const server = redisForFile({ own: true });
const factory = engineFactory(() => server.redis.url, 'fence-restart');
const engine = (keyPrefix: string, events?: EventLog): LockEngine => factory.engine({ keyPrefix }, events);
const closers = closersForFile();

/** What a lock protects: it refuses a write whose token is lower than the highest it has seen. */
class FencedResource {
  private highest = 0;
  readonly accepted: number[] = [];
  readonly refused: number[] = [];

  write(token: number): boolean {
    if (token < this.highest) {
      this.refused.push(token);
      return false;
    }
    this.highest = token;
    this.accepted.push(token);
    return true;
  }
}

/** `rounds` holders one after another, each writing with its token; the tokens they got. */
async function writeRounds(
  rounds: number,
  take: () => Promise<LockHandle>,
  resource: FencedResource,
): Promise<number[]> {
  const tokens: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const lock = await take();
    try {
      tokens.push(await lock.fencingToken());
      resource.write(await lock.fencingToken());
    } finally {
      await lock.release();
    }
  }
  return tokens;
}

/**
 * Resolves on the client's next 'ready'. Not `events.once`: that rejects on the first
 * 'error', and a reconnect attempt while the server is down emits ECONNREFUSED as one.
 */
function nextReady(client: { once(event: 'ready', listener: () => void): unknown }): Promise<void> {
  return new Promise((resolve) => client.once('ready', () => resolve()));
}

/** Each token is above the one before. */
function rising(tokens: readonly number[]): boolean {
  return tokens.every((t, i) => i === 0 || t > tokens[i - 1]);
}

/** Each token is the previous one plus 1: what a live counter hands out (the in-memory twin). */
function consecutive(tokens: readonly number[]): boolean {
  return tokens.every((t, i) => i === 0 || t === tokens[i - 1] + 1);
}

describe('fencing tokens across a Redis restart without persistence', () => {
  it('keep rising, so a fenced resource refuses no legitimate write (mutex and write locks)', async () => {
    const keyPrefix = uniquePrefix('fence-restart');
    const e = engine(keyPrefix);
    const ledger = new FencedResource();
    const catalog = new FencedResource();
    const mutexRounds = (): Promise<number[]> => writeRounds(20, () => e.acquire('ledger'), ledger);
    const writeLockRounds = (): Promise<number[]> => writeRounds(20, () => e.acquireWrite('catalog'), catalog);

    const before = [await mutexRounds(), await writeLockRounds()];
    expect(await server.admin.exists(`${keyPrefix}{ledger}:fence`, `${keyPrefix}{catalog}:rw:fence`)).toBe(2);

    const ready = nextReady(e.client as Redis);
    await server.redis.process!.stop();
    await server.redis.process!.restart();
    await ready;
    expect(await server.admin.exists(`${keyPrefix}{ledger}:fence`, `${keyPrefix}{catalog}:rw:fence`)).toBe(0);

    const after = [await mutexRounds(), await writeLockRounds()];
    expect(await server.admin.mget(`${keyPrefix}{ledger}:fence`, `${keyPrefix}{catalog}:rw:fence`)).toEqual(
      after.map((tokens) => String(tokens[tokens.length - 1])),
    );
    expect(ledger.refused).toEqual([]);
    expect(catalog.refused).toEqual([]);
    expect(ledger.accepted).toHaveLength(40);
    expect(catalog.accepted).toHaveLength(40);
    for (const [i, tokens] of after.entries()) {
      // A fresh counter starts above the old one, then rises with every grant again.
      expect(tokens[0]).toBeGreaterThan(before[i][before[i].length - 1]);
      expect(rising(before[i])).toBe(true);
      expect(rising(tokens)).toBe(true);
    }
    // The resource still does its job: a holder from before the restart that writes late is refused.
    expect(ledger.write(before[0][19])).toBe(false);
    expect(catalog.write(before[1][19])).toBe(false);
  });

  it('never run ahead of the server clock: a plain grant never seeds a counter, so a restart cannot set tokens back', async () => {
    const keyPrefix = uniquePrefix('fence-clock');
    const e = engine(keyPrefix);
    const serverMicros = async (): Promise<number> => {
      const [seconds, micros] = await server.admin.time();
      return Number(seconds) * 1_000_000 + Number(micros);
    };
    const scriptCalls = (): Promise<number> => callsOf(server.admin, 'evalsha', 'eval');
    const setCalls = (): Promise<number> => callsOf(server.admin, 'set');
    // A counter whose seed ran ahead of the clock, as one seeded from a process's estimate of
    // that clock could be: the store must not trust a counter it did not see seeded.
    const counter = `${keyPrefix}{ahead}:fence`;
    const ahead = (await serverMicros()) + 5_000_000;
    await server.admin.set(counter, String(ahead), 'PX', 60_000);
    const first = await e.acquire('ahead');
    // Tokens only rise: this one is above the counter, and the store now knows the name.
    expect(await first.fencingToken()).toBeGreaterThan(ahead);
    await first.release();

    // Plain grants: a SET of the lock only, and a token minted by script (from the server
    // clock) when read, never above that clock.
    const fresh = await e.withLock('plain', (lock) => lock.fencingToken());
    expect(fresh).toBeLessThanOrEqual(await serverMicros());
    const before = await scriptCalls();
    const setsBefore = await setCalls();
    const tokens: number[] = [];
    for (let i = 0; i < 20; i++) {
      const lock = await e.acquire('plain');
      tokens.push(await lock.fencingToken());
      expect(await lock.fencingToken()).toBeLessThanOrEqual(await serverMicros());
      await lock.release();
    }
    // Per cycle, two scripts (the mint on the first read only, and the release) and three
    // SETs: the grant's, and the mint's of the counter and of the lock's value. The grants
    // were not scripts, and none seeded the counter from this process's idea of the time.
    expect((await scriptCalls()) - before).toBe(40);
    expect((await setCalls()) - setsBefore).toBe(60);
    expect(rising([fresh, ...tokens])).toBe(true);

    // A restart wipes the counter: the next grant, plain again, seeds from the server clock.
    const ready = nextReady(e.client as Redis);
    await server.redis.process!.stop();
    await server.redis.process!.restart();
    await ready;
    const after = await e.withLock('plain', (lock) => lock.fencingToken());
    expect(after).toBeGreaterThan(tokens[tokens.length - 1]);
    expect(await server.admin.pttl(`${keyPrefix}{plain}:fence`)).toBeGreaterThan(0);
  });

  it('keep rising when the first grant on a lost counter is a hand-off to a fair waiter', async () => {
    const keyPrefix = uniquePrefix('fence-handoff');
    const events = new EventLog();
    const [a, b] = [engine(keyPrefix), engine(keyPrefix, events)];
    const holder = await a.acquire('queue', { fair: true });
    const parked = events.next({ type: 'waiting', key: 'queue' });
    const waiting = b.acquire('queue', { fair: true, waitMs: 30_000 });
    await parked;
    // The counter is gone while the lock and its queue are not: the hand-off in release.lua
    // is then the grant that starts a new counter.
    expect(await server.admin.del(`${keyPrefix}{queue}:fence`)).toBe(1);
    const holderToken = await holder.fencingToken();
    await holder.release();
    const next = await waiting;
    expect(await next.fencingToken()).toBeGreaterThan(holderToken);
    // Exactly the stored token: the hand-off message carries all 16 digits, not Lua's 14.
    expect(String(await next.fencingToken())).toBe(await server.admin.get(`${keyPrefix}{queue}:fence`));
    await next.release();
  });

  it('keep rising in the in-memory twin across reset(), as on Redis', async () => {
    const backend = new MemoryLockBackend();
    const e = new LockEngine({}, undefined, backend);
    closers.push(() => closeNow(e));
    const resource = new FencedResource();
    const before = await writeRounds(20, () => e.acquire('ledger'), resource);
    backend.reset();
    const after = await writeRounds(20, () => e.acquire('ledger'), resource);
    expect(resource.refused).toEqual([]);
    expect(after[0]).toBeGreaterThan(before[19]);
    expect(consecutive(before) && consecutive(after)).toBe(true);
  });
});
