import type { Redis } from 'ioredis';
import { LockEngine } from 'lockwarden/core';
import { LockAbortedError, LockConfigError, LockLostError, LockTimeoutError } from 'lockwarden/errors';
import type { LockEngineOptions } from 'lockwarden/core';
import { EventLog } from '../harness/event-log';
import { engineFactory } from '../harness/engines';
import { grantOrder } from '../harness/grant-order';
import { redisForFile } from '../harness/redis';

const server = redisForFile();
const { engine, pair } = engineFactory(() => server.redis.url, 'mutex');
// Under the name the runLocked tests read it by: they are left as they are while their API changes.
let admin: Redis;
beforeAll(() => (admin = server.admin));

describe('mutual exclusion', () => {
  it('lets 50 concurrent flows through one at a time and loses no update', async () => {
    const [a, b] = pair();
    let counter = 0;
    let inside = 0;
    let maxInside = 0;
    const flows = Array.from({ length: 50 }, (_, i) =>
      (i % 2 ? a : b).withLock('counter', async () => {
        inside++;
        maxInside = Math.max(maxInside, inside);
        const read = counter;
        await admin.ping(); // a real await between read and write
        counter = read + 1;
        inside--;
      }),
    );
    await Promise.all(flows);
    expect(counter).toBe(50);
    expect(maxInside).toBe(1);
  });

  it('runs flows on different keys in parallel', async () => {
    const e = engine();
    let inside = 0;
    let maxInside = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const flows = ['a', 'b', 'c'].map((key) =>
      e.withLock(key, async () => {
        inside++;
        maxInside = Math.max(maxInside, inside);
        if (inside === 3) release();
        await gate;
        inside--;
      }),
    );
    await Promise.all(flows);
    expect(maxInside).toBe(3);
  });
});

describe('reentrancy', () => {
  it('runLocked runs work as the holder (a nested acquire re-enters), then releases', async () => {
    const e = engine();
    const outer = (await e.acquire('frames')) as Parameters<LockEngine['runLocked']>[0][number];
    const outerToken = await outer.fencingToken();
    const token = await e.runLocked([outer], async () => {
      const inner = await e.acquire('frames', { waitMs: 0 }); // re-enters the frame's lock
      const innerToken = await inner.fencingToken();
      await inner.release();
      expect(outer.isHeld()).toBe(true);
      return innerToken;
    });
    expect(token).toBe(outerToken);
    expect(outer.isHeld()).toBe(false);
    expect(await admin.exists(`${e.options.keyPrefix}{frames}`)).toBe(0);
    expect('runInFrames' in e).toBe(false);
  });

  it('runLocked runs work holding handles, then releases them; heldLocks counts them', async () => {
    const e = engine();
    type Held = Parameters<LockEngine['runLocked']>[0][number];
    const first = (await e.acquire('run-locked')) as Held;
    expect(e.heldLocks).toBe(1);
    const firstToken = await first.fencingToken();
    expect(await e.runLocked([first], () => first.fencingToken())).toBe(firstToken);
    expect(first.isHeld()).toBe(false);
    expect(e.heldLocks).toBe(0);
    const second = (await e.acquire('run-locked')) as Held;
    const secondToken = await second.fencingToken();
    expect(await e.runLocked([second], () => second.fencingToken())).toBe(secondToken);
    expect(second.isHeld()).toBe(false);
    expect(e.heldLocks).toBe(0);
    // The removed names are gone, not aliases.
    expect('hold' in e || 'heldCount' in e || 'runHolding' in e).toBe(false);
  });
});

describe('fencing tokens', () => {
  it('rise strictly per key across engines and survive release', async () => {
    const [a, b] = pair();
    const tokens: number[] = [];
    for (let i = 0; i < 10; i++) {
      tokens.push(await (i % 2 ? a : b).withLock('f', (lock) => lock.fencingToken()));
    }
    expect(tokens[0]).toBeGreaterThan(0);
    expect(tokens.every((t, i) => i === 0 || t > tokens[i - 1])).toBe(true);
    // Each key has its own counter: minting on one never moves another.
    const other = await a.withLock('other-key', (lock) => lock.fencingToken());
    const fBefore = await admin.get(`${a.options.keyPrefix}{f}:fence`);
    expect(await b.withLock('other-key', (lock) => lock.fencingToken())).toBeGreaterThan(other);
    expect(await admin.get(`${a.options.keyPrefix}{f}:fence`)).toBe(fBefore);
  });
});

describe('fencing tokens on one server: a plain SET when uncontended, minted from the server clock when read', () => {
  const serverMicros = async (): Promise<number> => {
    const [seconds, micros] = await admin.time();
    return Number(seconds) * 1_000_000 + Number(micros);
  };

  it('an uncontended grant is a SET NX PX with no token; the first read mints one into the value and the counter', async () => {
    const e = engine();
    await e.withLock('fast', () => undefined);
    const lock = await e.acquire('fast');
    const key = `${e.options.keyPrefix}{fast}`;
    const owner = (lock as unknown as { lease: { ownerToken: string } }).lease.ownerToken;
    expect(await admin.get(key)).toBe(`${owner}||${e.options.instanceId}`);
    expect(await admin.exists(`${key}:fence`)).toBe(0);
    expect((await e.inspect('fast')).fencingToken).toBeNull();
    const before = await serverMicros();
    const token = await lock.fencingToken();
    expect(token).toBeGreaterThanOrEqual(before);
    expect(await admin.get(key)).toBe(`${owner}|${token}|${e.options.instanceId}`);
    expect(await admin.get(`${key}:fence`)).toBe(String(token));
    expect(await admin.pttl(`${key}:fence`)).toBeGreaterThan(0);
    expect((await e.inspect('fast')).fencingToken).toBe(token);
    await lock.release();
    expect(await admin.exists(key)).toBe(0);
  });

  it('a counter an older version left (small, no TTL) is re-seeded from the server clock', async () => {
    const e = engine();
    await e.withLock('warm', () => undefined);
    const counter = `${e.options.keyPrefix}{legacy}:fence`;
    await admin.set(counter, '41');
    const before = await serverMicros();
    const token = await e.withLock('legacy', (lock) => lock.fencingToken());
    expect(token).toBeGreaterThanOrEqual(before);
    expect(token).toBeLessThanOrEqual(await serverMicros());
    expect(await admin.get(counter)).toBe(String(token));
    expect(await admin.pttl(counter)).toBeGreaterThan(0);
  });

  it('tokens follow the server clock past a counter set back (a failover to a replica that missed the last grants)', async () => {
    const e = engine();
    const first = await e.withLock('clock', (lock) => lock.fencingToken());
    await admin.set(`${e.options.keyPrefix}{clock}:fence`, '41', 'PX', 60_000);
    const before = await serverMicros();
    const second = await e.withLock('clock', (lock) => lock.fencingToken());
    expect(second).toBeGreaterThan(first);
    expect(second).toBeGreaterThanOrEqual(before);
  });

  it('refuses the removed clockTokens option before anything touches Redis', () => {
    expect(() => engine({ clockTokens: true } as unknown as Partial<LockEngineOptions>)).toThrow(LockConfigError);
  });
});

describe('release', () => {
  it('is idempotent and only releases our own hold', async () => {
    const e = engine();
    const lock = await e.acquire('idem');
    expect(await lock.release()).toBe(true);
    expect(await lock.release()).toBe(false);
    expect(lock.isHeld()).toBe(false);
  });

  it('from a stale handle after expiry leaves the new owner intact', async () => {
    const events = new EventLog();
    const [a, b] = pair({}, events);
    // The token minted with the grant, as the grant's event tells it: read from the handle, it
    // would race the 100 ms lease on a busy machine (a handle past its lease reads as lost).
    const granted = events.next({ type: 'acquired', key: 'stale' });
    const stale = await a.acquire('stale', { leaseMs: 100, renew: false, fenced: true });
    const staleToken = Number((await granted).fencingToken);
    expect(staleToken).toBeGreaterThan(0);
    const fresh = await b.acquire('stale', { waitMs: 10_000 }); // granted once the 100 ms lease ran out
    expect(await fresh.fencingToken()).toBeGreaterThan(staleToken);
    // Lost: a read now rejects, and mints nothing.
    await expect(stale.fencingToken()).rejects.toBeInstanceOf(LockLostError);
    expect(await stale.release()).toBe(false);
    expect(fresh.isHeld()).toBe(true);
    await expect(fresh.extend(5_000)).resolves.toBeUndefined();
    expect(await fresh.release()).toBe(true);
  });
});

describe('waiting', () => {
  it('wakes a waiter by the release message, not by polling', async () => {
    const events = new EventLog();
    // A 10-minute lease, and places renewed every 3 minutes: if the waiter slept until the
    // lease ended or its place was due, the test would time out.
    const [a, b] = pair({ placeMs: 600_000 }, events);
    const holder = await a.acquire('handoff', { leaseMs: 600_000, renew: false });
    const parked = events.next({ type: 'waiting', key: 'handoff' });
    const waiting = b.acquire('handoff', { waitMs: 600_000 });
    await parked;
    const holderToken = await holder.fencingToken();
    await holder.release();
    const lock = await waiting;
    expect(await lock.fencingToken()).toBeGreaterThan(holderToken);
    expect(events.count({ type: 'waiting', key: 'handoff' })).toBe(1);
    // Handed off by the release, in another engine, and used as told.
    expect(events.count({ type: 'acquired', key: 'handoff', handedOff: true })).toBe(1);
    await lock.release();
  });

  it('fails at once with waitMs: 0 and after the budget otherwise', async () => {
    const e = engine();
    const holder = await e.acquire('busy');
    await expect(e.acquire('busy', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
    const err = await e.acquire('busy', { waitMs: 150 }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(LockTimeoutError);
    expect((err as LockTimeoutError).message).toMatch(/held by someone else/);
    expect((err as LockTimeoutError).message).not.toMatch(/quorum/i);
    // The script a waiting attempt runs said how long the holder's lease still ran.
    expect((err as LockTimeoutError).retryAfterMs).toBeGreaterThan(0);
    // With waitMs: 0 the only look was the plain SET NX, which says nothing of the lease:
    // no Retry-After is made up (the engine knows the server's clock since the holder's grant).
    const once = (await e.acquire('busy', { waitMs: 0 }).catch((x: unknown) => x)) as LockTimeoutError;
    expect(once).toBeInstanceOf(LockTimeoutError);
    expect(once.retryAfterMs).toBeUndefined();
    await holder.release();
  });

  it('cancels a wait with an AbortSignal and leaves nothing behind', async () => {
    const events = new EventLog();
    const e = engine({}, events);
    const holder = await e.acquire('cancel');
    const ctrl = new AbortController();
    const parked = events.next({ type: 'waiting', key: 'cancel' });
    const waiting = e.acquire('cancel', { signal: ctrl.signal, waitMs: 600_000 });
    await parked;
    ctrl.abort(new Error('user gave up'));
    await expect(waiting).rejects.toBeInstanceOf(LockAbortedError);
    await holder.release();
    expect(await admin.exists(`${e.options.keyPrefix}{cancel}`)).toBe(0);
  });

  it.each([false, true])('undoes a grant that lands just as the caller gives up (fair: %s)', async (fair) => {
    const e = engine();
    const ctrl = new AbortController();
    // The script is already on the wire when the abort arrives: Redis grants the lock, the caller is gone.
    const attempt = e.acquire('orphan', { signal: ctrl.signal, fair });
    ctrl.abort();
    await expect(attempt).rejects.toBeInstanceOf(LockAbortedError);
    expect(await admin.exists(`${e.options.keyPrefix}{orphan}`)).toBe(0);
    expect(await admin.exists(`${e.options.keyPrefix}{orphan}:queue`)).toBe(0);
    expect(await e.tryAcquire('orphan').then((l) => l?.release())).toBe(true);
  });

  it('rejects a signal that is already aborted without touching Redis', async () => {
    const e = engine();
    await expect(e.acquire('pre', { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(LockAbortedError);
    expect(await admin.exists(`${e.options.keyPrefix}{pre}:fence`)).toBe(0);
  });
});

describe('fair acquires', () => {
  it('grants waiters in arrival order, across engines', async () => {
    const events = new EventLog();
    const [a, b] = pair({}, events);
    const holder = await a.acquire('fifo', { fair: true });
    // The next waiter arrives only after this one has queued.
    const order = await grantOrder(events, holder, [b, a], 6, { fair: true, waitMs: 60_000 });
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('drops a dead waiter from the queue after a bounded time', async () => {
    const [a, b] = pair();
    const holder = await a.acquire('dead', { fair: true });
    // A waiter that queued and then vanished: its record says it checked in long ago.
    const prefix = a.options.keyPrefix;
    await admin.zadd(`${prefix}{dead}:queue`, 1, 'ghost-token');
    await admin.hset(`${prefix}{dead}:waiters`, 'ghost-token', '1|30000|ghost|ghost-host');
    const next = b.acquire('dead', { fair: true, waitMs: 60_000 });
    await holder.release();
    const lock = await next;
    expect(lock.isHeld()).toBe(true);
    expect(await admin.zscore(`${prefix}{dead}:queue`, 'ghost-token')).toBeNull();
    await lock.release();
  });
});
