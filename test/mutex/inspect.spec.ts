import { Test } from '@nestjs/testing';
import { LockConfigError, LockModule, LockService } from 'lockwarden';
import { LeaseHandle } from '../../libs/lockwarden/src/core/lease/lease';
import { EventLog } from '../harness/event-log';
import { engineFactory } from '../harness/engines';
import { redisForFile, uniquePrefix } from '../harness/redis';

const server = redisForFile();
const { pair } = engineFactory(() => server.redis.url, 'inspect');

describe('inspect()', () => {
  it('reports a free lock, a held mutex with its holder and queued waiters, and never an owner token', async () => {
    const [a, b] = pair({ instanceId: 'billing-1' });
    expect(await a.inspect('invoice')).toEqual({
      key: 'invoice',
      held: false,
      kind: null,
      holders: [],
      leaseLeftMs: 0,
      fencingToken: null,
      waiters: 0,
    });
    const lock = await a.acquire('invoice', { leaseMs: 60_000, renew: false });
    const lockToken = await lock.fencingToken();
    const events = new EventLog();
    const [, c] = pair({ keyPrefix: a.options.keyPrefix, onEvent: events.listener });
    const parked = events.next({ type: 'waiting' });
    const waiting = c.acquire('invoice', { fair: true, waitMs: 60_000 });
    await parked;
    const info = await b.inspect('invoice');
    expect(info).toMatchObject({ held: true, kind: 'mutex', fencingToken: lockToken, waiters: 1 });
    expect(info.holders).toEqual([{ instanceId: 'billing-1', leaseLeftMs: expect.any(Number) }]);
    expect(info.leaseLeftMs).toBeGreaterThan(50_000);
    expect(JSON.stringify(info)).not.toContain((lock as LeaseHandle).lease.ownerToken);
    await lock.release();
    const next = await waiting;
    const nextToken = await next.fencingToken();
    expect(nextToken).toBeGreaterThan(lockToken);
    await next.release();
    // Free: the last token handed out on this name.
    expect(await b.inspect('invoice')).toMatchObject({ held: false, fencingToken: nextToken });
  });

  it('reports read holders one by one, and a writer', async () => {
    const [a, b] = pair();
    const readers = [await a.acquireRead('catalog'), await b.acquireRead('catalog')];
    const info = await a.inspect('catalog');
    expect(info).toMatchObject({ held: true, kind: 'read' });
    expect(info.holders).toHaveLength(2);
    for (const r of readers) await r.release();
    const writer = await b.acquireWrite('catalog');
    expect(await a.inspect('catalog')).toMatchObject({
      held: true,
      kind: 'write',
      fencingToken: await writer.fencingToken(),
    });
    await writer.release();
  });

  it('rejects a bad key before touching Redis', async () => {
    const [a] = pair();
    await expect(a.inspect('')).rejects.toBeInstanceOf(LockConfigError);
    await expect(a.forceUnlock(42 as unknown as string)).rejects.toBeInstanceOf(LockConfigError);
  });
});

describe('forceUnlock()', () => {
  it('frees a stuck lock and wakes its waiter at once', async () => {
    const [a, b] = pair();
    // A fixed 60 s lease: without the wake-up the waiter would sleep until it ran out.
    const stuck = await a.acquire('stuck', { leaseMs: 60_000, renew: false });
    const stuckToken = await stuck.fencingToken();
    const events = new EventLog();
    const [, c] = pair({ keyPrefix: a.options.keyPrefix, onEvent: events.listener });
    const parked = events.next({ type: 'waiting' });
    const waiter = c.acquire('stuck', { waitMs: 120_000 });
    await parked;
    expect(await b.forceUnlock('stuck')).toBe(true);
    const next = await waiter;
    expect(await next.fencingToken()).toBeGreaterThan(stuckToken);
    await next.release();
    expect(await b.forceUnlock('stuck')).toBe(false);
  });

  it('is on LockService too', async () => {
    const app = await Test.createTestingModule({
      imports: [
        LockModule.forRoot({ redis: server.redis.url, keyPrefix: uniquePrefix('inspect-svc'), instanceId: 'svc-1' }),
      ],
    }).compile();
    await app.init();
    try {
      const locks = app.get(LockService);
      await locks.withLock('job', async () => {
        const info = await locks.inspect('job');
        expect(info.holders[0].instanceId).toBe('svc-1');
      });
      expect(await locks.forceUnlock('job')).toBe(false);
    } finally {
      await app.close();
    }
  });
});
