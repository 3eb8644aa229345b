// Reentrancy: a lock is re-entered by the async flow that holds it (inside its withLock, or
// a callback under it), sharing the outer hold's lease and fencing token, and kept until the
// last hold goes. Sibling flows, and bare acquires outside any callback, are other owners.
// A read/write lock re-enters read in read and write in write, and a read inside a write is a
// downgrade; a write inside a read (an upgrade) is refused.
import { AsyncLocalStorage } from 'node:async_hooks';
import { jest } from '@jest/globals';
import { LockTimeoutError, LockUpgradeError } from 'lockwarden/errors';
import type { AcquireOptions, LockEngine, LockHandle } from 'lockwarden/core';
import { engineFactory } from '../harness/engines';
import { EventLog } from '../harness/event-log';
import { redisForFile } from '../harness/redis';

const server = redisForFile();
const { engine, pair } = engineFactory(() => server.redis.url, 'reentrancy');

/** Each kind of lock as one flow takes it: alone (`take`), and around a callback (`around`); `suffix` ends its Redis key. */
const KINDS: [string, string, (e: LockEngine) => Kind][] = [
  ['a mutex', '', (e) => ({ take: (k, o) => e.acquire(k, o), around: (k, fn) => e.withLock(k, fn) })],
  ['a read lock', ':rw', (e) => ({ take: (k, o) => e.acquireRead(k, o), around: (k, fn) => e.withReadLock(k, fn) })],
  ['a write lock', ':rw', (e) => ({ take: (k, o) => e.acquireWrite(k, o), around: (k, fn) => e.withWriteLock(k, fn) })],
];
interface Kind {
  take(key: string, options: AcquireOptions): Promise<LockHandle>;
  around<T>(key: string, fn: (lock: LockHandle) => Promise<T>): Promise<T>;
}

it.each(KINDS)(
  '%s is re-entered by the flow that holds it, alone or around a callback, with the outer fencing token',
  async (_, suffix, kindOf) => {
    const e = engine();
    const { take, around } = kindOf(e);
    await around('r', async (outer) => {
      const inner = await take('r', { waitMs: 0 });
      expect(await inner.fencingToken()).toBe(await outer.fencingToken());
      expect(await around('r', (lock) => lock.fencingToken())).toBe(await outer.fencingToken());
      expect(await inner.release()).toBe(true);
      expect(outer.isHeld()).toBe(true);
      expect(e.current('r')).toBe(outer);
    });
    expect(await server.admin.exists(`${e.options.keyPrefix}{r}${suffix}`)).toBe(0);
  },
);

describe('a mutex', () => {
  it('shares the outer hold’s token with a reentrant hold that mints it first', async () => {
    const e = engine();
    const [outer, inner] = await e.withLock('k', async (lock) => {
      const innerToken = await e.withLock('k', (again) => again.fencingToken());
      return [await lock.fencingToken(), innerToken];
    });
    expect(inner).toBe(outer);
  });

  it('keeps the lock until the last hold is released', async () => {
    const e = engine();
    let inner: Awaited<ReturnType<LockEngine['acquire']>> | undefined;
    await e.withLock('hold', async () => {
      inner = await e.acquire('hold');
    });
    expect(inner?.isHeld()).toBe(true);
    expect(await server.admin.exists(`${e.options.keyPrefix}{hold}`)).toBe(1);
    expect(await inner?.release()).toBe(true);
    expect(await server.admin.exists(`${e.options.keyPrefix}{hold}`)).toBe(0);
  });

  it('keeps renewing the lease of an inner hold that outlives its enclosing withLock', async () => {
    const events = new EventLog();
    // Renewed every second, with seconds of room: four renewals outlast the 3 s lease, which
    // the lock would not without them.
    const e = engine({ leaseMs: 3_000 }, events);
    const inner = await e.withLock('outlives', () => e.acquire('outlives', { waitMs: 0 }));
    await events.renewals('outlives', 4);
    expect(inner.isHeld()).toBe(true);
    expect(await server.admin.pttl(`${e.options.keyPrefix}{outlives}`)).toBeGreaterThan(0);
    expect(await e.tryAcquire('outlives')).toBeNull(); // a bare acquire is another owner
    expect(await inner.release()).toBe(true);
    expect(await server.admin.exists(`${e.options.keyPrefix}{outlives}`)).toBe(0);
  });

  it('treats sibling flows under one Promise.all as different owners', async () => {
    const e = engine();
    let inside = 0;
    let maxInside = 0;
    const sibling = (): Promise<void> =>
      e.withLock('s', async () => {
        inside++;
        maxInside = Math.max(maxInside, inside);
        await server.admin.ping();
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

describe('a read/write lock', () => {
  it('downgrades: a read inside a write is granted and outlives the write', async () => {
    const [a, b] = pair();
    let read: LockHandle | undefined;
    await a.withWriteLock('down', async () => {
      read = await a.acquireRead('down', { waitMs: 0 });
      await expect(b.acquireRead('down', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
    });
    expect(read!.isHeld()).toBe(true);
    const otherReader = await b.acquireRead('down', { waitMs: 0 }); // the write is gone, reads share
    await expect(b.acquireWrite('down', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
    await otherReader.release();
    await read!.release();
  });

  it('refuses an upgrade at once with LockUpgradeError', async () => {
    const e = engine();
    await e.withReadLock('up', async () => {
      await expect(e.acquireWrite('up', { waitMs: 60_000 })).rejects.toBeInstanceOf(LockUpgradeError);
    });
  });
});

describe('engines in one process', () => {
  it('never re-enter each other’s locks: another engine inside a callback waits like any other owner', async () => {
    const [a, b] = pair();
    await a.withLock('apart', async () => {
      await expect(b.acquire('apart', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
      expect(b.current('apart')).toBeUndefined();
    });
  });

  it('share one AsyncLocalStorage: engines made and closed do not add one each to every await', async () => {
    // Node visits every enabled AsyncLocalStorage for each promise made and keeps it until it is
    // disabled. Count the instances that enter a frame while 20 engines each run a callback.
    const entered = new Set<AsyncLocalStorage<unknown>>();
    const run = AsyncLocalStorage.prototype.run;
    const spy = jest.spyOn(AsyncLocalStorage.prototype, 'run').mockImplementation(function (
      this: AsyncLocalStorage<unknown>,
      store: unknown,
      fn: (...args: unknown[]) => unknown,
      ...args: unknown[]
    ) {
      entered.add(this);
      return run.call(this, store, fn, ...args);
    });
    try {
      for (let i = 0; i < 20; i++) {
        const e = engine();
        await e.withLock('each', async () => {
          expect(e.current('each')).toBeDefined();
        });
        await e.close();
      }
    } finally {
      spy.mockRestore();
    }
    expect(entered.size).toBe(1);
  });
});
