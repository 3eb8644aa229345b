import type { Redis } from 'ioredis';
import { LockAbortedError, LockConfigError, LockEngine, LockLostError, LockTimeoutError } from 'lockwarden';
import type { LockEngineOptions } from 'lockwarden';
import { aborted, EventLog } from '../harness/event-log';
import { engineFactory } from '../harness/engines';
import { startRedis } from '../harness/redis';
import type { RedisTarget } from '../harness/redis';

let redis: RedisTarget;
let admin: Redis;

beforeAll(async () => {
  redis = await startRedis();
  admin = redis.client();
});

const { engine, pair } = engineFactory(() => redis.url, 'mutex');

afterAll(async () => {
  await admin.quit();
  await redis.stop();
});

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
  it('re-enters a key held by an enclosing withLock, with the outer fencing token', async () => {
    const e = engine();
    await e.withLock('r', async (outer) => {
      const inner = await e.acquire('r', { waitMs: 0 });
      expect(await inner.fencingToken()).toBe(await outer.fencingToken());
      const nested = await e.withLock('r', (lock) => lock.fencingToken());
      expect(nested).toBe(await outer.fencingToken());
      expect(await inner.release()).toBe(true);
      expect(outer.isHeld()).toBe(true);
      expect(e.current('r')).toBe(outer);
    });
    expect(await admin.exists(`${e.options.keyPrefix}{r}`)).toBe(0);
  });

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

  it('keeps the lock until the last hold is released', async () => {
    const e = engine();
    let inner: Awaited<ReturnType<LockEngine['acquire']>> | undefined;
    await e.withLock('hold', async () => {
      inner = await e.acquire('hold');
    });
    expect(inner?.isHeld()).toBe(true);
    expect(await admin.exists(`${e.options.keyPrefix}{hold}`)).toBe(1);
    expect(await inner?.release()).toBe(true);
    expect(await admin.exists(`${e.options.keyPrefix}{hold}`)).toBe(0);
  });

  it('treats sibling flows under one Promise.all as different owners', async () => {
    const e = engine();
    let inside = 0;
    let maxInside = 0;
    const sibling = (): Promise<void> =>
      e.withLock('s', async () => {
        inside++;
        maxInside = Math.max(maxInside, inside);
        await admin.ping();
        inside--;
      });
    await e.withLock('parent', () => Promise.all([sibling(), sibling(), sibling()]));
    expect(maxInside).toBe(1);
  });

  it('never re-enters from a bare acquire outside any callback', async () => {
    const e = engine();
    const first = await e.acquire('bare');
    await expect(e.acquire('bare', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
    await expect(e.tryAcquire('bare')).resolves.toBeNull();
    await first.release();
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
    // Handed over by the release, in another engine, and used as told.
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
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 6; i++) {
      const parked = events.next({ type: 'waiting', key: 'fifo' });
      waiters.push(
        (i % 2 ? a : b).acquire('fifo', { fair: true, waitMs: 60_000 }).then(async (lock) => {
          order.push(i);
          await lock.release();
        }),
      );
      await parked; // the next waiter arrives only after this one has queued
    }
    await holder.release();
    await Promise.all(waiters);
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

describe('watchdog', () => {
  it('keeps a lock past its lease, and aborts the signal when the key is deleted', async () => {
    const events = new EventLog();
    const e = engine({ leaseMs: 3_000 }, events); // seconds of room for each renewal on a busy machine
    const lock = await e.acquire('wd');
    await events.renewals('wd', 4); // four renewals, one a second: past one lease
    expect(lock.isHeld()).toBe(true);
    expect(await admin.pttl(`${e.options.keyPrefix}{wd}`)).toBeGreaterThan(0);
    await admin.del(`${e.options.keyPrefix}{wd}`);
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
    expect(await admin.pttl(`${e.options.keyPrefix}{own-lease}`)).toBeLessThanOrEqual(3_000);
    await events.renewals('own-lease', 1);
    expect(renewed.isHeld()).toBe(true);
    await renewed.release();
    const fixed = await e.acquire('old-ttl', { leaseMs: 100, renew: false });
    expect(await admin.pttl(`${e.options.keyPrefix}{old-ttl}`)).toBeLessThanOrEqual(100);
    expect(await aborted(fixed.signal)).toBeInstanceOf(LockLostError);
    expect(events.count({ type: 'renewed', key: 'old-ttl' })).toBe(0);
  });

  it('rejects withLock with LockLostError when the lock is lost mid-callback', async () => {
    const e = engine({ leaseMs: 150 });
    let sawAbort = false;
    const run = e.withLock('mid', async (lock) => {
      await admin.del(`${e.options.keyPrefix}{mid}`);
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
      await admin.del(`${e.options.keyPrefix}{err}`);
      await aborted(lock.signal);
      throw boom;
    });
    await expect(run).rejects.toBe(boom);
  });

  it('extends a held lock and refuses to extend a lost one', async () => {
    const e = engine();
    const lock = await e.acquire('ext', { leaseMs: 1_000, renew: false });
    await lock.extend(60_000);
    expect(await admin.pttl(`${e.options.keyPrefix}{ext}`)).toBeGreaterThan(1_000);
    await expect(lock.extend(5)).rejects.toBeInstanceOf(LockConfigError);
    await expect(lock.extend(5)).rejects.toThrow(/extend\(ms\) must be an integer from 10/);
    await admin.del(`${e.options.keyPrefix}{ext}`);
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    expect(lock.signal.aborted).toBe(true);
  });
});
