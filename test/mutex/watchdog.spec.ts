// The watchdog: one timer that renews every held lease before it ends, tells a holder at once
// when its lease is gone (deleted, taken, or out of time before a renewal got through), stops at
// maxHoldMs, and turns a hand-off's short lease into the lease that was asked for. Each lock
// kind is renewed by it; the cross-server suite (test/behaviour) runs the basics elsewhere too.
import { LockEngine } from 'lockwarden/core';
import { LockConfigError, LockLostError } from 'lockwarden/errors';
import { mutexKeys } from '../../libs/lockwarden/src/core/backend/lock-keys';
import { Lease } from '../../libs/lockwarden/src/core/lease/lease';
import { callsOf } from '../harness/command-stats';
import { engineFactory } from '../harness/engines';
import { aborted, EventLog } from '../harness/event-log';
import { handOffs } from '../harness/hand-off';
import { redisForFile, startRedis, uniquePrefix } from '../harness/redis';
import type { RedisTarget } from '../harness/redis';

// Its own server: the hand-off tests count the script calls Redis ran.
const server = redisForFile({ own: true });
const { engine, pair } = engineFactory(() => server.redis.url, 'watchdog');
const { handOff } = handOffs(engine);

/** A server of the test's own, stopped after it: for tests that pause Redis or count all its calls. */
const ownServers: RedisTarget[] = [];
async function ownServer(): Promise<RedisTarget> {
  const own = await startRedis({ own: true });
  ownServers.push(own);
  return own;
}
afterEach(async () => {
  for (const own of ownServers.splice(0)) await own.stop();
});

describe('renewal', () => {
  it('keeps a lock past its lease, and aborts the signal when the key is deleted', async () => {
    const events = new EventLog();
    const e = engine({ leaseMs: 3_000 }, events); // seconds of room for each renewal on a busy machine
    const lock = await e.acquire('wd');
    await events.renewals('wd', 4); // four renewals, one a second: past one lease
    expect(lock.isHeld()).toBe(true);
    expect(await server.admin.pttl(`${e.options.keyPrefix}{wd}`)).toBeGreaterThan(0);
    await server.admin.del(`${e.options.keyPrefix}{wd}`);
    const reason = await aborted(lock.signal);
    expect(reason).toBeInstanceOf(LockLostError);
    expect(lock.isHeld()).toBe(false);
    expect(await lock.release()).toBe(false);
  });

  it('does not renew a fixed lease (renew: false) and aborts before it ends', async () => {
    const events = new EventLog();
    const e = engine({}, events);
    const lock = await e.acquire('fixed', { leaseMs: 100, renew: false });
    const reason = await aborted(lock.signal);
    expect(reason).toBeInstanceOf(LockLostError);
    expect(events.count({ type: 'renewed', key: 'fixed' })).toBe(0);
  });

  it('renews a lease of its own length (leaseMs) unless renew is false', async () => {
    const events = new EventLog();
    const e = engine({}, events);
    // Far below the engine's 30 s default, with room for a renewal on a busy machine.
    const renewed = await e.acquire('own-lease', { leaseMs: 3_000 });
    expect(await server.admin.pttl(`${e.options.keyPrefix}{own-lease}`)).toBeLessThanOrEqual(3_000);
    await events.renewals('own-lease', 1);
    expect(renewed.isHeld()).toBe(true);
    await renewed.release();
    const fixed = await e.acquire('old-ttl', { leaseMs: 100, renew: false });
    expect(await server.admin.pttl(`${e.options.keyPrefix}{old-ttl}`)).toBeLessThanOrEqual(100);
    expect(await aborted(fixed.signal)).toBeInstanceOf(LockLostError);
    expect(events.count({ type: 'renewed', key: 'old-ttl' })).toBe(0);
  });

  it('renews a permit held longer than its lease', async () => {
    const events = new EventLog();
    const e = engine({ shutdownGraceMs: 1 }, events);
    const sem = e.semaphore('renewed', { limit: 1 });
    // Renewed every second, with seconds of room for a loaded machine's late timers.
    const permit = await sem.acquire({ leaseMs: 3_000 });
    await events.renewals('renewed', 4); // over a lease's worth of renewals
    expect(permit.isHeld()).toBe(true);
    expect(permit.signal.aborted).toBe(false);
    expect(await sem.tryAcquire()).toBeNull();
    const [seconds, micros] = await server.admin.time();
    const now = Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000);
    const holders = `${e.options.keyPrefix}{renewed}:sem:holders`;
    const [, deadline] = await server.admin.zrange(holders, '0', '0', 'WITHSCORES');
    expect(Number(deadline)).toBeGreaterThanOrEqual(now);
    expect(await permit.release()).toBe(true);
  });

  it('renews 10 000 held locks in at most 100 round trips per round', async () => {
    const own = await ownServer();
    const events = new EventLog();
    const e = engine({ redis: own.url, leaseMs: 6_000 }, events);
    const keys = Array.from({ length: 10_000 }, (_, i) => `k${i}`);
    for (let i = 0; i < keys.length; i += 500) {
      await Promise.all(keys.slice(i, i + 500).map((k) => e.acquire(k)));
    }
    const admin = own.client();
    try {
      const before = await callsOf(admin, 'evalsha', 'eval');
      const roundsBefore = e.watchdog.rounds;
      await events.next({ type: 'renewed' }, 10_000); // one renewal of every lock
      expect((await callsOf(admin, 'evalsha', 'eval')) - before).toBeLessThanOrEqual(100);
      // Rounds group the leases falling due together: how many depends on how long taking
      // 10 000 locks took on this machine, but never approaches one per lock.
      expect(e.watchdog.rounds - roundsBefore).toBeLessThanOrEqual(20);
    } finally {
      admin.disconnect();
    }
  });
});

describe('lost leases', () => {
  it('stops counting a lost lease as held: shutdown neither waits for it nor calls it abandoned', async () => {
    const warnings: string[] = [];
    const logger = { warn: (m: string) => warnings.push(m), debug: () => undefined, log: () => undefined };
    const events = new EventLog();
    // A grace no test would sit out: close() must not wait for a lock that is gone.
    const e = new LockEngine(
      {
        redis: server.redis.url,
        keyPrefix: uniquePrefix('lost-close'),
        shutdownGraceMs: 600_000,
        onEvent: events.listener,
      },
      logger,
    );
    // Listened for before the locks are taken: the 200 ms lease can end before a slow second
    // acquire returns, and a loss told before anyone listens would never be heard.
    const bothLost = Promise.all([
      events.next({ type: 'lost', key: 'fixed' }),
      events.next({ type: 'lost', key: 'deleted' }),
    ]);
    const fixed = await e.acquire('fixed', { leaseMs: 200, renew: false }); // never released
    const lost = await e.acquire('deleted', { leaseMs: 1_500 }); // renewed, and so found gone, within a second
    await server.admin.del(`${e.options.keyPrefix}{deleted}`);
    await bothLost;
    expect(fixed.isHeld()).toBe(false);
    expect(lost.isHeld()).toBe(false);
    expect(e.heldLocks).toBe(0);
    await e.close();
    expect(warnings.filter((w) => w.startsWith('Shut down with'))).toEqual([]);
  });

  it('rejects withLock with LockLostError when the lock is lost mid-callback', async () => {
    const e = engine({ leaseMs: 150 });
    let sawAbort = false;
    const run = e.withLock('mid', async (lock) => {
      await server.admin.del(`${e.options.keyPrefix}{mid}`);
      await aborted(lock.signal);
      sawAbort = lock.signal.aborted;
      return 'done';
    });
    await expect(run).rejects.toBeInstanceOf(LockLostError);
    expect(sawAbort).toBe(true);
  });

  it('lets the callback error win over a lost lock and a failed release', async () => {
    const e = engine({ leaseMs: 150 });
    const boom = new Error('boom');
    const run = e.withLock('err', async (lock) => {
      await server.admin.del(`${e.options.keyPrefix}{err}`);
      await aborted(lock.signal);
      throw boom;
    });
    await expect(run).rejects.toBe(boom);
  });

  it('tells the holder of a force-unlocked lock at its next renewal', async () => {
    // The renewal that finds the key gone must come before the lease ends (else the loss reads
    // "ran out"): a warm engine and a lease with seconds of room, renewed after one.
    const [a, b] = pair({ leaseMs: 3_000 });
    await (await a.acquire('warm-up')).release();
    const held = await a.acquire('renewed');
    expect(await b.forceUnlock('renewed')).toBe(true);
    expect(await aborted(held.signal)).toBeInstanceOf(LockLostError);
    expect(String((held.signal.reason as Error).message)).toMatch(/no longer ours/);
  });

  it('aborts every read and write holder whose read/write lock was deleted', async () => {
    const [a, b] = pair({ leaseMs: 300 });
    const r1 = await a.acquireRead('gone');
    const r2 = await b.acquireRead('gone');
    await server.admin.del(`${a.options.keyPrefix}{gone}:rw`);
    expect(await aborted(r1.signal)).toBeInstanceOf(LockLostError);
    expect(await aborted(r2.signal)).toBeInstanceOf(LockLostError);

    const w = await a.acquireWrite('gone2');
    await server.admin.del(`${a.options.keyPrefix}{gone2}:rw`);
    expect(await aborted(w.signal)).toBeInstanceOf(LockLostError);
  });

  it('aborts the signal before the lease ends when Redis stops accepting writes (CLIENT PAUSE)', async () => {
    const own = await ownServer();
    const pauser = own.client();
    // Warm, and a lease with seconds of room: the abort comes at 80% of it, and the test's own
    // PTTL must still reach Redis before the lease ends on a loaded machine.
    const e = engine({ redis: own.url, leaseMs: 10_000 });
    try {
      await (await e.acquire('warm-up')).release();
      const lock = await e.acquire('paused');
      await pauser.call('CLIENT', 'PAUSE', '30000', 'WRITE');
      try {
        const reason = await aborted(lock.signal);
        expect(reason).toBeInstanceOf(LockLostError);
        expect((reason as Error).message).toMatch(/before a renewal succeeded/);
        expect(await pauser.pttl(`${e.options.keyPrefix}{paused}`)).toBeGreaterThan(0); // told before anyone else could take it
      } finally {
        await pauser.call('CLIENT', 'UNPAUSE');
      }
    } finally {
      pauser.disconnect();
    }
  });
});

describe('maxHoldMs', () => {
  it('stops renewal and aborts the signal once reached; the lock then lapses on its own', async () => {
    const events = new EventLog();
    const keyPrefix = uniquePrefix('maxhold');
    // A lease counts from when its first command was sent, so on a cold engine it includes
    // connecting. Under a loaded suite that took more than a 200 ms lease's 160 ms once, and
    // the lock was (rightly) lost before the test read its token: warm up first, and give
    // the lease room.
    const e = engine({ keyPrefix, leaseMs: 3_000 }, events);
    const other = engine({ keyPrefix });
    await (await e.acquire('warm-up')).release();
    // The cap, not a late renewal, must be what ends it: renewals every second, the cap at 8 s.
    const lock = await e.acquire('capped', { maxHoldMs: 8_000 });
    const lockToken = await lock.fencingToken();
    const reason = await aborted(lock.signal);
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as Error).message).toMatch(/maxHoldMs/);
    expect(events.count({ type: 'renewed', key: 'capped' })).toBeGreaterThan(0);
    const renewals = events.count({ type: 'renewed', key: 'capped' });
    const next = await other.acquire('capped', { waitMs: 10_000 });
    expect(await next.fencingToken()).toBeGreaterThan(lockToken);
    expect(events.count({ type: 'renewed', key: 'capped' })).toBe(renewals);
    await next.release();
  });
});

describe('extend()', () => {
  it('extends a held lock and refuses to extend a lost one', async () => {
    const e = engine();
    const lock = await e.acquire('ext', { leaseMs: 1_000, renew: false });
    await lock.extend(60_000);
    expect(await server.admin.pttl(`${e.options.keyPrefix}{ext}`)).toBeGreaterThan(1_000);
    await expect(lock.extend(5)).rejects.toBeInstanceOf(LockConfigError);
    await expect(lock.extend(5)).rejects.toThrow(/extend\(ms\) must be an integer from 10/);
    await server.admin.del(`${e.options.keyPrefix}{ext}`);
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    expect(lock.signal.aborted).toBe(true);
  });
});

describe('a hand-off lease', () => {
  it('is extended to the full lease once held past it, and the signal stays live', async () => {
    const { keyPrefix, events, lock } = await handOff('handoff-extend', 'x', { leaseMs: 30_000 });
    // The hand-off set 700 ms on the server; the first renewal sets the full 30 s.
    await events.renewals('x', 1);
    expect(await server.admin.pttl(`${keyPrefix}{x}`)).toBeGreaterThan(700);
    expect(lock.signal.aborted).toBe(false);
    await lock.release();
  });

  it('keeps a handed-off lock whose holder blocks its event loop past the hand-off lease: the renewal went out first', async () => {
    // Hand-off lease 1.4 s, so its local abort time is about 1.1 s after the grant; the
    // server has that long to take the renewal sent as the lock was handed off.
    const { keyPrefix, events, lock } = await handOff('handoff-block', 'x', { leaseMs: 30_000 }, { placeMs: 2_000 });
    // Synchronous work past the local abort time of the hand-off lease, as a CPU-bound
    // section or a long GC pause would be.
    const until = performance.now() + 1_500;
    while (performance.now() < until) {
      // busy
    }
    // The watchdog's timer runs before the renewal's answer is read: the answer still comes
    // first (renewals() fails the test if the lock is lost before it).
    await events.renewals('x', 1);
    expect(events.count({ type: 'lost', key: 'x' })).toBe(0);
    expect(lock.signal.aborted).toBe(false);
    expect(await server.admin.pttl(`${keyPrefix}{x}`)).toBeGreaterThan(2_000);
    await lock.release();
  });

  it('of a fixed lease (renew: false) is used with no call, extended once to the end it asked for', async () => {
    let before = 0;
    const { keyPrefix, events, lock } = await handOff(
      'handoff-fixed',
      'f',
      { leaseMs: 5_000, renew: false },
      {},
      async () => {
        before = await callsOf(server.admin, 'evalsha');
      },
    );
    // Its one extension, out of the 700 ms hand-off lease: to 5 s from the grant, no more.
    await events.renewals('f', 1);
    const ttl = await server.admin.pttl(`${keyPrefix}{f}`);
    expect(ttl).toBeGreaterThan(700);
    expect(ttl).toBeLessThanOrEqual(5_000);
    // The release that handed it off and that extension: no call to confirm it.
    expect((await callsOf(server.admin, 'evalsha')) - before).toBe(3); // release-plain.lua, release.lua, renew.lua
    expect(lock.signal.aborted).toBe(false);
    await lock.release();
  });
});

describe('what a renewal asks for', () => {
  it('the whole lease, whatever the fractions of the clock: a renewed lease is never read as capped', () => {
    const host = { releaseLease: async () => true, extendLease: async () => undefined, mintFence: async () => 1 };
    const lock = { kind: 'mutex' as const, keys: mutexKeys('p:', 'k') };
    const lease = new Lease(host, lock, 'k', 'owner', undefined, 10_000, true, 2_000, 0);
    // Moments where (now + 10 000) - now is 9 999.99…, in floating point.
    const moments = [12273.611707550148, ...Array.from({ length: 2_000 }, (_, i) => i * 997.123456789)];
    for (const now of moments) expect(lease.renewalMs(now)).toBe(10_000);
    // Capped by maxHoldMs, it asks for what is left, and never past it.
    lease.maxHoldUntil = 5_000.5;
    expect(lease.renewalMs(1_000.25)).toBe(4_000);
  });
});
