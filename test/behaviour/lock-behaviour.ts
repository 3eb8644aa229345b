import { Injectable } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  LockAbortedError,
  LockConfigError,
  LockEngine,
  LockLostError,
  LockService,
  LockTimeoutError,
  LockUpgradeError,
  Locked,
  ReadLocked,
  WriteLocked,
} from 'lockwarden';
import type { LockEngineOptions } from 'lockwarden';
import { aborted, EventLog } from '../harness/event-log';
import { grantOrder } from '../harness/grant-order';

/** How one backend makes engines and Nest modules that share their locks. */
export interface Backend {
  /** Two engines that see the same locks (two processes on one Redis). */
  pair(options?: Partial<LockEngineOptions>): [LockEngine, LockEngine];
  /** A Nest module that provides LockService on this backend, sharing locks with pair()'s. */
  module(): DynamicModule;
}

/**
 * The behaviour both backends must show, run once against real Redis and once
 * against the in-memory test double (LockTestingModule), so the double cannot
 * drift from the real thing.
 */
export function describeLockBehaviour(label: string, backend: () => Backend): void {
  describe(`lock behaviour on ${label}`, () => {
    it('excludes: 30 flows from two engines, one at a time, no lost update', async () => {
      const [a, b] = backend().pair();
      let counter = 0;
      let inside = 0;
      let overlap = 0;
      await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          (i % 2 ? a : b).withLock('counter', async () => {
            if (++inside > 1) overlap++;
            const read = counter;
            await new Promise((r) => setImmediate(r));
            counter = read + 1;
            inside--;
          }),
        ),
      );
      expect(overlap).toBe(0);
      expect(counter).toBe(30);
    });

    it('re-enters along the flow with the outer token, and siblings exclude each other', async () => {
      const [a] = backend().pair();
      await a.withLock('re', async (outer) => {
        const inner = await a.acquire('re', { waitMs: 0 });
        expect(await inner.fencingToken()).toBe(await outer.fencingToken());
        await inner.release();
        expect(outer.isHeld()).toBe(true);
      });
      const order: string[] = [];
      await Promise.all(
        ['x', 'y'].map((n) =>
          a.withLock('sib', async () => {
            order.push(`${n}-in`);
            await new Promise((r) => setImmediate(r));
            order.push(`${n}-out`);
          }),
        ),
      );
      expect(order[1]).toMatch(/-out$/);
      await expect(a.withLock('sib', () => a.acquire('other', { fair: 3 as never }))).rejects.toBeInstanceOf(
        LockConfigError,
      );
    });

    it('hands out fencing tokens that rise across engines and survive release', async () => {
      const [a, b] = backend().pair();
      const tokens: number[] = [];
      for (let i = 0; i < 6; i++) {
        const lock = await (i % 2 ? a : b).acquire('fence');
        tokens.push(await lock.fencingToken());
        await lock.release();
      }
      expect(tokens[0]).toBeGreaterThan(0);
      expect(tokens.every((t, i) => i === 0 || t > tokens[i - 1])).toBe(true);
    });

    it('releases idempotently, only its own hold, and a stale handle never frees the next owner', async () => {
      const [a, b] = backend().pair();
      const lock = await a.acquire('own', { leaseMs: 30, renew: false });
      await new Promise((r) => setTimeout(r, 60));
      const next = await b.acquire('own', { waitMs: 0 });
      expect(await lock.release()).toBe(false);
      expect(await lock.release()).toBe(false);
      expect(next.isHeld()).toBe(true);
      await expect(a.acquire('own', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
      expect(await next.release()).toBe(true);
    });

    it('times out, waits for a release, and cancels on a signal without leaving a lock', async () => {
      const [a, b] = backend().pair();
      const held = await a.acquire('busy', { leaseMs: 60_000, renew: false });
      await expect(b.acquire('busy', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
      expect(await b.tryAcquire('busy')).toBeNull();
      await expect(b.acquire('busy', { waitMs: 30 })).rejects.toBeInstanceOf(LockTimeoutError);
      const controller = new AbortController();
      const cancelled = b.acquire('busy', { waitMs: 60_000, signal: controller.signal });
      controller.abort();
      await expect(cancelled).rejects.toBeInstanceOf(LockAbortedError);
      const waiter = b.acquire('busy', { waitMs: 60_000 });
      const heldToken = await held.fencingToken();
      await held.release();
      const next = await waiter;
      expect(await next.fencingToken()).toBeGreaterThan(heldToken);
      await next.release();
      expect((await a.inspect('busy')).held).toBe(false);
    });

    it('grants fair waiters in arrival order', async () => {
      const events = new EventLog();
      const [a, b] = backend().pair({ onEvent: events.listener });
      const held = await a.acquire('fifo', { leaseMs: 60_000, renew: false, fair: true });
      const order = await grantOrder(events, held, [b, a], 4, { fair: true, waitMs: 60_000 });
      expect(order).toEqual([0, 1, 2, 3]);
    });

    it('keeps a renewed lock past its lease, and aborts its signal once it is taken away', async () => {
      const events = new EventLog();
      // A lease long enough to be renewed on a machine busy with other tests; a lease lost
      // meanwhile fails the test with what happened, rather than leaving it waiting.
      // Renewed every second: four renewals outlast the 3 s lease.
      const [a, b] = backend().pair({ leaseMs: 3_000, onEvent: events.listener });
      const lock = await a.acquire('kept');
      await events.renewals('kept', 4);
      expect(lock.isHeld()).toBe(true);
      expect(await b.forceUnlock('kept')).toBe(true);
      expect(await aborted(lock.signal)).toBeInstanceOf(LockLostError);
      await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    });

    it('keeps a lockAtLeastMs lock after release, and frees it after', async () => {
      const [a, b] = backend().pair();
      // Long enough for a loaded machine's release and cold tryAcquire to land inside it.
      const lock = await a.acquire('daily', { lockAtLeastMs: 3_000 });
      await lock.release();
      expect(await b.tryAcquire('daily')).toBeNull();
      const next = await b.acquire('daily', { waitMs: 10_000 });
      await next.release();
    });

    it('lets readers share, keeps writers alone, downgrades, and refuses upgrades', async () => {
      const [a, b] = backend().pair();
      const r1 = await a.acquireRead('doc');
      const r2 = await b.acquireRead('doc');
      await expect(b.acquireWrite('doc', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
      await r1.release();
      await r2.release();
      const w = await a.acquireWrite('doc');
      await expect(b.acquireRead('doc', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
      await w.release();
      await a.withWriteLock('doc', async (write) => {
        const read = await a.acquireRead('doc');
        expect(await read.fencingToken()).toBe(await write.fencingToken());
        await read.release();
      });
      await expect(a.withReadLock('doc', () => a.acquireWrite('doc'))).rejects.toBeInstanceOf(LockUpgradeError);
    });

    it('puts new readers behind a waiting writer (writer preference), unless they ask not to', async () => {
      const events = new EventLog();
      const [a, b] = backend().pair({ onEvent: events.listener });
      const reader = await a.acquireRead('pref', { leaseMs: 60_000, renew: false });
      const parked = events.next({ type: 'waiting', key: 'pref' });
      const writer = b.acquireWrite('pref', { waitMs: 60_000 });
      await parked;
      // From the reader's engine, and from the waiting writer's own.
      for (const e of [a, b]) {
        await expect(e.acquireRead('pref', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
        const polite = await e.acquireRead('pref', { waitMs: 0, writerPreference: false });
        await polite.release();
      }
      await reader.release();
      await (await writer).release();
    });

    it('reports holders through inspect(), never their tokens', async () => {
      const [a] = backend().pair({ instanceId: 'shop-1' });
      const lock = await a.acquire('seen', { leaseMs: 60_000, renew: false });
      // Uncontended, the holder has no token until it reads one: inspect() says so.
      expect((await a.inspect('seen')).fencingToken).toBeNull();
      const token = await lock.fencingToken();
      expect(await a.inspect('seen')).toMatchObject({
        key: 'seen',
        held: true,
        kind: 'mutex',
        holders: [{ instanceId: 'shop-1', leaseLeftMs: expect.any(Number) }],
        fencingToken: token,
        waiters: 0,
      });
      await lock.release();
    });

    it('renews read and write leases past their lease time, and a taken-away one is lost', async () => {
      const events = new EventLog();
      // Renewed every second, with seconds of room: four rounds of both outlast the 3 s lease.
      const [a, b] = backend().pair({ leaseMs: 3_000, onEvent: events.listener });
      const read = await a.acquireRead('rw-kept');
      const other = await b.acquireRead('rw-kept');
      await events.renewals('rw-kept', 8);
      expect(read.isHeld()).toBe(true);
      expect(other.isHeld()).toBe(true);
      await other.release();
      await read.release();
      const write = await a.acquireWrite('rw-kept');
      const writeToken = await write.fencingToken();
      // A write lost meanwhile fails the test with what happened, rather than leaving it waiting.
      await Promise.race([
        events.next((e) => e.type === 'renewed' && e.key === 'rw-kept' && e.fencingToken === writeToken, 4),
        aborted(write.signal).then((reason) => {
          throw new Error(`the write lease was lost before 4 renewals: ${String(reason)}`);
        }),
      ]);
      expect(write.isHeld()).toBe(true);
      expect(await b.forceUnlock('rw-kept')).toBe(true);
      expect(await aborted(write.signal)).toBeInstanceOf(LockLostError);
      expect(await b.forceUnlock('rw-kept')).toBe(false);
    });

    it('reports read and write holders through inspect(), and what a free lock last handed out', async () => {
      const [a, b] = backend().pair({ instanceId: 'shop-2' });
      const write = await a.acquireWrite('seen-rw', { leaseMs: 60_000, renew: false });
      const writeToken = await write.fencingToken();
      expect(await a.inspect('seen-rw')).toMatchObject({
        held: true,
        kind: 'write',
        holders: [{ instanceId: 'shop-2', leaseLeftMs: expect.any(Number) }],
        fencingToken: writeToken,
        waiters: 0,
      });
      await write.release();
      const r1 = await a.acquireRead('seen-rw', { leaseMs: 60_000, renew: false });
      const r2 = await b.acquireRead('seen-rw', { leaseMs: 30_000, renew: false });
      const info = await a.inspect('seen-rw');
      expect(info).toMatchObject({ held: true, kind: 'read', fencingToken: writeToken, waiters: 0 });
      expect(info.holders).toHaveLength(2);
      expect(info.leaseLeftMs).toBe(Math.max(...info.holders.map((h) => h.leaseLeftMs)));
      // One name for the lease left: the removed ttlMs is gone.
      expect(info).not.toHaveProperty('ttlMs');
      for (const h of info.holders) expect(h).not.toHaveProperty('ttlMs');
      await r1.release();
      await r2.release();
      const mutex = await a.acquire('seen-free');
      const mutexToken = await mutex.fencingToken();
      await mutex.release();
      expect(await a.inspect('seen-free')).toMatchObject({
        held: false,
        kind: null,
        holders: [],
        fencingToken: mutexToken,
      });
    });

    it('runs decorated methods with onBusy wait, throw and skip', async () => {
      @Injectable()
      class Jobs {
        runs = 0;
        @Locked('job:{0}', { onBusy: 'skip' })
        async skip(id: string): Promise<string> {
          this.runs++;
          return id;
        }
        @Locked('job:{0}', { onBusy: 'throw' })
        async strict(id: string): Promise<string> {
          return id;
        }
        @ReadLocked('cfg')
        async read(): Promise<number> {
          return 1;
        }
        @WriteLocked('cfg')
        async write(): Promise<number> {
          return this.read();
        }
      }
      const moduleRef = await Test.createTestingModule({ imports: [backend().module()], providers: [Jobs] }).compile();
      await moduleRef.init();
      try {
        const jobs = moduleRef.get(Jobs);
        const locks = moduleRef.get(LockService);
        expect(await jobs.skip('1')).toBe('1');
        const held = await locks.acquire('job:2');
        expect(await jobs.skip('2')).toBeUndefined();
        await expect(jobs.strict('2')).rejects.toBeInstanceOf(LockTimeoutError);
        await held.release();
        expect(await jobs.strict('2')).toBe('2');
        expect(jobs.runs).toBe(1);
        expect(await jobs.write()).toBe(1); // a read inside a write: a downgrade, not a deadlock
      } finally {
        await moduleRef.close();
      }
    });
  });
}
