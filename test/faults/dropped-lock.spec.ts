import { LockLostError } from 'lockwarden/errors';
import type { LockEngine, LockHandle } from 'lockwarden/core';
import { engineFactory } from '../harness/engines';
import { EventLog } from '../harness/event-log';
import { redisForFile } from '../harness/redis';
import { checkScheduledOptions } from '../../libs/lockwarden/src/core/schedule/scheduled-options';
import { everySchedule } from '../../libs/lockwarden/src/core/schedule/tick-schedule';

/**
 * A lock the server dropped while its holder ran (eviction, an operator's DEL, forceUnlock,
 * FLUSHALL): the release finds the key no longer ours, and the locked work is told, whatever
 * the server's policy. The observer is a second engine that takes the key meanwhile: it
 * holds the lock while the first one's work still runs, which only Redis and this test see.
 */
const server = redisForFile({ own: true });
const { pair } = engineFactory(() => server.redis.url, 'dropped');

/** Runs `locked` holding the lock, drops it from Redis with `drop`, has `b` take it, and returns what `locked` settles with. */
async function droppedUnder(
  locked: (fn: (handle: LockHandle) => Promise<string>) => Promise<string>,
  drop: () => Promise<unknown>,
  takeOver: () => Promise<LockHandle>,
): Promise<{ settled: unknown; handle: LockHandle; other: LockHandle }> {
  let handle!: LockHandle;
  let other!: LockHandle;
  const settled = await locked(async (h) => {
    handle = h;
    await drop();
    // Someone else holds it now, while this work still runs: what the release must tell.
    other = await takeOver();
    return 'work done';
  }).catch((err: unknown) => err);
  return { settled, handle, other };
}

function expectToldAfterWork(settled: unknown, key: string): void {
  expect(settled).toBeInstanceOf(LockLostError);
  const err = settled as LockLostError;
  expect(err.key).toBe(key);
  expect(err.workCompleted).toBe(true);
  expect(err.message).toMatch(/gone from Redis when it was released/);
  expect(err.message).toMatch(/ran to its end, while the lock may have been held elsewhere/);
  expect(err.message).not.toMatch(/Stop the protected work/);
}

describe('a lock Redis dropped while its work ran is told at its release', () => {
  let a: LockEngine;
  let b: LockEngine;
  let prefix: string;
  const events = new EventLog();

  beforeEach(() => {
    [a, b] = pair({ leaseMs: 30_000 }, events);
    prefix = a.options.keyPrefix;
  });

  it('withLock rejects with LockLostError (workCompleted) after an operator DEL, and the new holder keeps its lock', async () => {
    const unprotected = events.next({ type: 'unprotected', key: 'del' });
    const { settled, handle, other } = await droppedUnder(
      (fn) => a.withLock('del', fn),
      () => server.admin.del(`${prefix}{del}`),
      () => b.acquire('del', { waitMs: 0 }),
    );
    expectToldAfterWork(settled, 'del');
    expect(handle.signal.aborted).toBe(true);
    expect(handle.signal.reason).toBeInstanceOf(LockLostError);
    expect((await unprotected).reason).toMatch(/gone from Redis/);
    expect(events.count({ type: 'lost', key: 'del' })).toBe(1);
    expect(events.count({ type: 'released', key: 'del' })).toBe(0);
    // The release took nothing from the new holder.
    expect(other.isHeld()).toBe(true);
    expect(await other.release()).toBe(true);
  });

  it('the same for a lock handed off by the queue (released by the queue script), after forceUnlock', async () => {
    // `a` waits for it and is handed it: a contended lease, whose release goes through release.lua.
    const first = await b.acquire('force');
    const waiting = events.next({ type: 'waiting', key: 'force' });
    const { settled, other } = await droppedUnder(
      async (fn) => {
        const locked = a.withLock('force', fn);
        await waiting;
        await first.release();
        return locked;
      },
      () => b.forceUnlock('force'),
      () => b.acquire('force', { waitMs: 0 }),
    );
    expectToldAfterWork(settled, 'force');
    expect(await other.release()).toBe(true);
  });

  it('the same after FLUSHALL, for a lock kept to lockAtLeastMs', async () => {
    const { settled, other } = await droppedUnder(
      (fn) => a.withLock('flushed', fn, { lockAtLeastMs: 10_000 }),
      () => server.admin.flushall(),
      () => b.acquire('flushed', { waitMs: 0 }),
    );
    expectToldAfterWork(settled, 'flushed');
    expect(await other.release()).toBe(true);
  });

  it('the same for read and write locks', async () => {
    const write = await droppedUnder(
      (fn) => a.withWriteLock('rw', fn),
      () => server.admin.del(`${prefix}{rw}:rw`),
      () => b.acquireWrite('rw', { waitMs: 0 }),
    );
    expectToldAfterWork(write.settled, 'rw');
    await write.other.release();
    const read = await droppedUnder(
      (fn) => a.withReadLock('rw', fn),
      () => server.admin.del(`${prefix}{rw}:rw`),
      () => b.acquireWrite('rw', { waitMs: 0 }),
    );
    expectToldAfterWork(read.settled, 'rw');
    await read.other.release();
  });

  it('the same for a semaphore permit', async () => {
    const { settled, other } = await droppedUnder(
      (fn) => a.semaphore('pool', { limit: 1 }).withPermit(fn),
      () => server.admin.del(`${prefix}{pool}:sem:holders`, `${prefix}{pool}:sem:permits`),
      () => b.semaphore('pool', { limit: 1 }).acquire({ waitMs: 0 }),
    );
    expectToldAfterWork(settled, 'pool');
    expect(await other.release()).toBe(true);
  });

  it('a scheduled tick whose lock was dropped ends with the same error', async () => {
    const job = a.scheduledJob('tick', everySchedule(3_600_000), checkScheduledOptions({}, 'test'));
    const settled = await job
      .run(async () => {
        await server.admin.del(`${prefix}{tick}`);
        await b.acquire('tick', { waitMs: 0 });
        return 'ran';
      })
      .catch((err: unknown) => err);
    expectToldAfterWork(settled, 'tick');
  });

  it("a bare release resolves false, aborts the handle's signal and counts a loss, not a release", async () => {
    const handle = await a.acquire('bare');
    await server.admin.del(`${prefix}{bare}`);
    expect(await handle.release()).toBe(false);
    expect(handle.signal.reason).toBeInstanceOf(LockLostError);
    expect(events.count({ type: 'lost', key: 'bare' })).toBe(1);
    expect(events.count({ type: 'released', key: 'bare' })).toBe(0);
  });

  it('work that ends after a loss the watchdog found is told the same way: it ran to its end', async () => {
    const settled = await a
      .withLock(
        'watched',
        async (h) => {
          // Listened for first: the watchdog may find the key gone before DEL's reply is read.
          const lost = events.next({ type: 'lost', key: 'watched' });
          await server.admin.del(`${prefix}{watched}`);
          await lost;
          expect(h.signal.aborted).toBe(true);
          return 'finished anyway';
        },
        { leaseMs: 600 },
      )
      .catch((err: unknown) => err);
    expect(settled).toBeInstanceOf(LockLostError);
    expect((settled as LockLostError).workCompleted).toBe(true);
    expect((settled as LockLostError).message).toMatch(/no longer ours/);
  });

  it('work that stops on its signal gets the loss as it threw it (not completed)', async () => {
    const settled = await a
      .withLock(
        'stopped',
        async (h) => {
          const lost = events.next({ type: 'lost', key: 'stopped' });
          await server.admin.del(`${prefix}{stopped}`);
          await lost;
          h.signal.throwIfAborted();
          return 'unreachable';
        },
        { leaseMs: 600 },
      )
      .catch((err: unknown) => err);
    expect(settled).toBeInstanceOf(LockLostError);
    expect((settled as LockLostError).workCompleted).toBe(false);
  });
});
