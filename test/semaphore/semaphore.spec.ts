import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  LockAbortedError,
  LockConfigError,
  LockEngine,
  LockLostError,
  LockModule,
  LockService,
  LockTimeoutError,
  Semaphore,
} from 'lockwarden';
import type { LockHandle } from 'lockwarden';
import { MemoryLockBackend } from 'lockwarden/testing';
import { Semaphore as SemaphoreObject } from '../../libs/lockwarden/src/core';
import { semKeys } from '../../libs/lockwarden/src/core/backend/lock-keys';
import { MAX_HANDOFFS } from '../../libs/lockwarden/src/core/semaphore/permit-release';
import { checkSemaphoreDecoratorOptions } from '../../libs/lockwarden/src/nest/decorators/semaphore-decorator-options';
import { workersForFile } from '../harness/child';
import type { ChildScript } from '../harness/child';
import { EventLog } from '../harness/event-log';
import { engineFactory } from '../harness/engines';
import { permitsAtOnce } from '../harness/permits';
import { redisForFile, uniquePrefix } from '../harness/redis';

const server = redisForFile();

// Tests end with permits still held: a short grace keeps each engine's close from waiting on them.
const factory = engineFactory(() => server.redis.url, 'semaphore');
const engine: typeof factory.engine = (options = {}, events) =>
  factory.engine({ shutdownGraceMs: 1, ...options }, events);
const pair: typeof factory.pair = (options = {}, events) => factory.pair({ shutdownGraceMs: 1, ...options }, events);

/** Waits for the next `waiting` event of `key` (the waiter has subscribed and parked): call it before the acquire. */
function parked(events: EventLog, key: string): Promise<unknown> {
  return events.next({ type: 'waiting', key });
}

describe('permits', () => {
  it('never lets more than the limit in across 60 concurrent flows on two engines, counting permits', async () => {
    const [a, b] = pair();
    const semA = a.semaphore('pool', { limit: 3 });
    const semB = b.semaphore('pool', { limit: 3 });
    const { peak, done } = await permitsAtOnce([semB, semA], 60, () => server.admin.ping());
    expect(done).toBe(60);
    expect(peak).toBeLessThanOrEqual(3);
    expect(peak).toBeGreaterThan(1);
  });

  it('takes several permits at once; tryAcquire is null when they do not fit', async () => {
    const sem = engine().semaphore('multi', { limit: 5 });
    const three = await sem.acquire({ permits: 3 });
    expect(await sem.tryAcquire({ permits: 3 })).toBeNull();
    const two = await sem.tryAcquire({ permits: 2 });
    expect(two).not.toBeNull();
    expect(await sem.tryAcquire()).toBeNull();
    await three.release();
    expect(await sem.tryAcquire({ permits: 3 })).not.toBeNull();
  });

  it('gives fencing tokens that rise per semaphore, and release() is idempotent', async () => {
    const sem = engine().semaphore('fence', { limit: 2 });
    const tokens: number[] = [];
    for (let i = 0; i < 4; i++) {
      const permit = await sem.acquire();
      tokens.push(await permit.fencingToken());
      expect(await permit.release()).toBe(true);
      expect(await permit.release()).toBe(false);
      expect(permit.isHeld()).toBe(false);
    }
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
  });

  it('times out with LockTimeoutError when the permits stay taken for the whole wait', async () => {
    const sem = engine().semaphore('timeout', { limit: 1 });
    await sem.acquire();
    await expect(sem.acquire({ waitMs: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
    await expect(sem.acquire({ waitMs: 50 })).rejects.toThrow(/waiting for 1 permit of semaphore "timeout"/);
  });

  it('cancels a wait with LockAbortedError when its signal fires, and leaves nothing held', async () => {
    const events = new EventLog();
    const e = engine({}, events);
    const sem = e.semaphore('abort', { limit: 1 });
    const held = await sem.acquire();
    const controller = new AbortController();
    const parking = parked(events, 'abort');
    const waiting = sem.acquire({ signal: controller.signal, waitMs: 30_000 });
    await parking;
    controller.abort();
    await expect(waiting).rejects.toBeInstanceOf(LockAbortedError);
    await held.release();
    expect(await sem.tryAcquire()).not.toBeNull();
  });

  it('withPermit gives the permits back when fn throws, and passes the handle', async () => {
    const sem = engine().semaphore('throws', { limit: 2 });
    let seen: LockHandle | undefined;
    await expect(
      sem.withPermit(
        (permit) => {
          seen = permit;
          throw new Error('boom');
        },
        { permits: 2 },
      ),
    ).rejects.toThrow('boom');
    expect(seen?.isHeld()).toBe(false);
    expect(await sem.tryAcquire({ permits: 2 })).not.toBeNull();
  });
});

describe('leases', () => {
  it('a holder whose renewals stop gives its permits back within a lease, and a waiter gets them', async () => {
    const events = new EventLog();
    const [a, b] = pair({}, events);
    // Long enough that its token is read while it is still held, on a loaded machine too.
    const held = await a.semaphore('lapse', { limit: 2 }).acquire({ permits: 2, leaseMs: 3_000 });
    const heldToken = await held.fencingToken();
    a.watchdog.stop();
    const next = await b.semaphore('lapse', { limit: 2 }).acquire({ permits: 2, waitMs: 30_000 });
    expect(await next.fencingToken()).toBeGreaterThan(heldToken);
    await expect(held.fencingToken()).rejects.toBeInstanceOf(LockLostError);
    expect(held.isHeld()).toBe(false); // its lease ran out locally too
    expect(held.lostError).toBeDefined();
  });

  it('a release wakes a parked waiter by pub/sub, long before the holder lease would end', async () => {
    const events = new EventLog();
    const [a, b] = pair({ leaseMs: 60_000 }, events);
    const held = await a.semaphore('wake', { limit: 1 }).acquire();
    const heldToken = await held.fencingToken();
    const parking = parked(events, 'wake');
    const waiting = b.semaphore('wake', { limit: 1 }).acquire({ waitMs: 50_000 });
    await parking;
    const releasedAt = performance.now();
    await held.release();
    const got = await waiting;
    // Without a message the waiter would sleep until the holder's 60 s lease ended.
    expect(performance.now() - releasedAt).toBeLessThan(60_000);
    expect(await got.fencingToken()).toBeGreaterThan(heldToken);
  });
});

describe('handing permits off within a process', () => {
  /** Counts what is published on a semaphore's wake-up channel, from a connection of the test's own. */
  async function channelLog(channel: string): Promise<{ messages: () => Promise<string[]>; close: () => void }> {
    const sub = server.redis.client();
    const heard: string[] = [];
    let end: (() => void) | undefined;
    sub.on('message', (_: string, m: string) => (m === '__end__' ? end?.() : heard.push(m)));
    await sub.subscribe(channel);
    return {
      messages: async () => {
        const done = new Promise<void>((resolve) => (end = resolve));
        await server.admin.publish(channel, '__end__'); // after everything published before it
        await done;
        return heard.splice(0);
      },
      close: () => sub.disconnect(),
    };
  }

  it(`a release grants a parked waiter of its own process directly, ${MAX_HANDOFFS} times in a row, then wakes everyone`, async () => {
    const events = new EventLog();
    const e = engine({}, events);
    const sem = e.semaphore('chain', { limit: 1 });
    const log = await channelLog(semKeys(e.options.keyPrefix, 'chain').channel);
    try {
      let holder = await sem.acquire();
      for (let i = 0; i <= MAX_HANDOFFS; i++) {
        const parking = parked(events, 'chain');
        const next = sem.acquire({ waitMs: 30_000 });
        await parking;
        const holderToken = await holder.fencingToken();
        await holder.release();
        const got = await next;
        expect(await got.fencingToken()).toBeGreaterThan(holderToken);
        expect(holder.isHeld()).toBe(false);
        holder = got;
        // Permits handed off within the process publish nothing on the semaphore's channel.
        // The release after MAX_HANDOFFS hand-offs hands the permit to the oldest queued waiter
        // instead, on its engine's inbox: here the same waiter, whose place it took when it
        // found no room.
        expect(await log.messages()).toEqual([]);
        if (i === MAX_HANDOFFS) expect(events.count({ type: 'acquired', key: 'chain', handedOff: true })).toBe(i + 1);
      }
      expect(await sem.inspect()).toMatchObject({ used: 1, holders: [{ permits: 1 }] });
      await holder.release();
    } finally {
      log.close();
    }
  });

  it('a waiter that gives up while permits are handed off to it leaves nothing held', async () => {
    const events = new EventLog();
    const e = engine({}, events);
    const sem = e.semaphore('giveup', { limit: 2 });
    for (let round = 0; round < 20; round++) {
      const holder = await sem.acquire({ permits: 2 });
      const controller = new AbortController();
      const parking = parked(events, 'giveup');
      const waiting = sem.acquire({ signal: controller.signal, waitMs: 30_000 });
      await parking;
      const released = holder.release();
      // Gives up before the release, while the hand-off is on its way to Redis or back (measured:
      // most rounds of the microtask and setImmediate kinds), or after it was granted. Every
      // way must end with nothing held by it.
      const abort = (): void => controller.abort();
      [() => abort(), () => queueMicrotask(abort), () => setImmediate(abort), () => setTimeout(abort, 0)][round % 4]();
      await released;
      const outcome = await waiting.then(
        (h) => h.release().then(() => 'granted'),
        (err: unknown) => (err instanceof LockAbortedError ? 'aborted' : err),
      );
      expect(['granted', 'aborted']).toContain(outcome);
      expect(await sem.inspect()).toMatchObject({ used: 0, holders: [] });
    }
  });
});

describe('setLimit', () => {
  it('raising the limit wakes waiters at once, while every holder keeps its permits', async () => {
    const events = new EventLog();
    const [a, b] = pair({ leaseMs: 60_000 }, events);
    const semA = a.semaphore('raise', { limit: 1 });
    const held = await semA.acquire();
    const parking = parked(events, 'raise');
    const waiting = b.semaphore('raise', { limit: 1 }).acquire({ waitMs: 50_000 });
    await parking;
    expect(await semA.setLimit(2)).toBe(1);
    const got = await waiting;
    expect(held.isHeld()).toBe(true); // so only the raised limit let it in
    expect(got.isHeld()).toBe(true);
    expect(semA.limit).toBe(2);
  });

  it('lowering the limit revokes nothing: holders stay and are renewed; new grants wait until enough leave', async () => {
    const events = new EventLog();
    const e = engine({}, events);
    const sem = e.semaphore('lower', { limit: 3 });
    const holders = [
      await sem.acquire({ leaseMs: 3_000 }),
      await sem.acquire({ leaseMs: 3_000 }),
      await sem.acquire({ leaseMs: 3_000 }),
    ];
    expect(await sem.setLimit(1)).toBe(3);
    await events.renewals('lower', 6);
    for (const h of holders) expect(h.isHeld()).toBe(true);
    expect(await sem.tryAcquire()).toBeNull();
    await holders[0].release();
    await holders[1].release();
    expect(await sem.tryAcquire()).toBeNull(); // one holder left, limit 1
    await holders[2].release();
    expect(await sem.tryAcquire()).not.toBeNull();
  });

  it('the stored limit rules over the one a later semaphore object is made with, both ways', async () => {
    const [a, b] = pair();
    const semA = a.semaphore('stored', { limit: 1 });
    const one = await semA.acquire();
    expect(await b.semaphore('stored', { limit: 5 }).tryAcquire()).toBeNull();
    await one.release();
    await semA.setLimit(4);
    // An object made with a lower number may still ask up to the stored limit.
    const three = await b.semaphore('stored', { limit: 2 }).tryAcquire({ permits: 3 });
    expect(three).not.toBeNull();
    await three!.release();
    // An ask above the stored limit waits for a raise: it gets in once setLimit makes room.
    const events = new EventLog();
    const c = engine({ keyPrefix: a.options.keyPrefix }, events);
    await expect(c.semaphore('stored', { limit: 4 }).acquire({ permits: 6, waitMs: 1 })).rejects.toThrow(
      /more than its limit of 4 as this instance knows it; only a setLimit\(\) that raises the stored limit/,
    );
    const parking = parked(events, 'stored');
    const six = c.semaphore('stored', { limit: 10 }).acquire({ permits: 6, waitMs: 30_000 });
    await parking;
    await semA.setLimit(6);
    expect((await six).isHeld()).toBe(true);
  });
});

describe('inspect', () => {
  it('reports the stored limit, the live holders with their permits, and the last fencing token', async () => {
    const [a, b] = pair();
    const semA = a.semaphore('seen', { limit: 4 });
    const before = await semA.inspect();
    expect(before).toMatchObject({ key: 'seen', limit: 4, used: 0, available: 4, holders: [], fencingToken: 0 });
    const two = await semA.acquire({ permits: 2, leaseMs: 30_000 });
    const one = await b.semaphore('seen', { limit: 4 }).acquire({ leaseMs: 30_000 });
    const info = await b.semaphore('seen', { limit: 9 }).inspect(); // the stored limit, not the object's
    expect(info).toMatchObject({ limit: 4, used: 3, available: 1, fencingToken: await one.fencingToken() });
    expect(info.holders.map((h) => h.permits).sort()).toEqual([1, 2]);
    for (const h of info.holders) expect([a.options.instanceId, b.options.instanceId]).toContain(h.instanceId);
    for (const h of info.holders) expect(h.leaseLeftMs).toBeGreaterThan(0);
    for (const h of info.holders) expect(h).not.toHaveProperty('ttlMs'); // the removed name of leaseLeftMs
    await semA.setLimit(2);
    expect(await semA.inspect()).toMatchObject({ limit: 2, used: 3, available: 0 });
    await Promise.all([two.release(), one.release()]);
    expect(await semA.inspect()).toMatchObject({ used: 0, available: 2, holders: [] });
  });
});

describe('refusals', () => {
  it('rejects bad input with LockConfigError before anything reaches Redis', async () => {
    // Nothing listens here: a call that reached the network would fail with a backend error instead.
    const e = engine({ redis: 'redis://127.0.0.1:1', commandTimeoutMs: 200 });
    expect(() => e.semaphore('', { limit: 1 })).toThrow(LockConfigError);
    expect(() => e.semaphore('k', { limit: 0 })).toThrow(LockConfigError);
    expect(() => e.semaphore('k', { limit: 1.5 })).toThrow(LockConfigError);
    expect(() => e.semaphore('k', {} as { limit: number })).toThrow(LockConfigError);
    expect(() => e.semaphore('k', { limit: 1, extra: 1 } as { limit: number })).toThrow(LockConfigError);
    const sem = e.semaphore('k', { limit: 2 });
    await expect(sem.acquire({ permits: 2 ** 31 })).rejects.toBeInstanceOf(LockConfigError);
    await expect(sem.acquire({ permits: 0 })).rejects.toBeInstanceOf(LockConfigError);
    await expect(sem.tryAcquire({ leaseMs: 5 })).rejects.toBeInstanceOf(LockConfigError);
    await expect(sem.acquire({ waitMs: -1 })).rejects.toBeInstanceOf(LockConfigError);
    await expect(sem.acquire({ fair: true })).rejects.toThrow(
      /fair is not an option for semaphores: their waiters queue in arrival order already/,
    );
    await expect(sem.acquire({ waitMS: 1 } as object)).rejects.toBeInstanceOf(LockConfigError);
    await expect(sem.acquire({ signal: 'no' } as unknown as object)).rejects.toBeInstanceOf(LockConfigError);
    await expect(sem.withPermit(undefined as unknown as () => void)).rejects.toBeInstanceOf(LockConfigError);
    await expect(sem.setLimit(-1)).rejects.toBeInstanceOf(LockConfigError);
  });

  it('is refused with a quorum, with the reason', () => {
    const e = engine({
      redis: undefined,
      quorum: { nodes: [`${server.redis.url}/1`, `${server.redis.url}/2`, `${server.redis.url}/3`] },
    });
    expect(() => e.semaphore('q', { limit: 2 })).toThrow(/consensus protocol/);
    expect(() => e.semaphore('q', { limit: 2 })).toThrow(LockConfigError);
  });
});

describe('removed names', () => {
  it('permits no longer names the limit: the option is refused, and no getter or setPermits() is left', async () => {
    const e = engine({ redis: 'redis://127.0.0.1:1', commandTimeoutMs: 200 });
    expect(() => e.semaphore('old-names', { permits: 2 } as unknown as { limit: number })).toThrow(
      /Unknown semaphore option "permits"/,
    );
    const sem = e.semaphore('old-names', { limit: 2 });
    expect('permits' in sem || 'setPermits' in sem).toBe(false);
    expect(() => checkSemaphoreDecoratorOptions({ permits: 2 } as unknown as { limit: number }, 'm')).toThrow(
      LockConfigError,
    );
  });
});

describe('memory backend', () => {
  it('behaves the same: limit, multi-permit, wake on release and on a raised limit, lapse', async () => {
    const backend = new MemoryLockBackend();
    const events = new EventLog();
    const options = { shutdownGraceMs: 1, onEvent: events.listener };
    const a = new LockEngine({ instanceId: 'a', ...options }, undefined, backend);
    const b = new LockEngine({ instanceId: 'b', ...options }, undefined, backend);
    try {
      const semA = a.semaphore('mem', { limit: 2 });
      const semB = b.semaphore('mem', { limit: 2 });
      expect(semA).toBeInstanceOf(SemaphoreObject);
      const two = await semA.acquire({ permits: 2 });
      expect(await semB.tryAcquire()).toBeNull();
      const parking = parked(events, 'mem');
      const waiting = semB.acquire({ waitMs: 30_000 });
      await parking;
      const twoToken = await two.fencingToken();
      await two.release();
      const one = await waiting;
      expect(await one.fencingToken()).toBeGreaterThan(twoToken);
      const parkingTwo = parked(events, 'mem');
      const waitingTwo = semB.acquire({ permits: 2, waitMs: 30_000 });
      await parkingTwo;
      await semA.setLimit(3);
      const three = await waitingTwo;
      expect(one.isHeld()).toBe(true);
      await Promise.all([one.release(), three.release()]);
      expect(await semB.inspect()).toMatchObject({ limit: 3, used: 0, holders: [] });
      const lapsing = await semA.acquire({ permits: 3, leaseMs: 200 });
      const lapsingToken = await lapsing.fencingToken();
      expect(await semB.inspect()).toMatchObject({
        limit: 3,
        used: 3,
        available: 0,
        holders: [{ instanceId: 'a', permits: 3 }],
        fencingToken: lapsingToken,
      });
      a.watchdog.stop();
      const semB3 = b.semaphore('mem', { limit: 3 });
      expect(await (await semB3.acquire({ permits: 3, waitMs: 30_000 })).fencingToken()).toBeGreaterThan(lapsingToken);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

@Injectable()
class Exports {
  inside = 0;
  maxInside = 0;
  seen: number[] = [];

  constructor(readonly locks: LockService) {}

  @Semaphore('exports:{0}', { limit: 2, waitMs: 30_000 })
  async run(region: string): Promise<string> {
    this.inside++;
    this.maxInside = Math.max(this.maxInside, this.inside);
    this.seen.push(await this.locks.current()!.fencingToken());
    await server.admin.ping();
    this.inside--;
    return `exported ${region}`;
  }

  @Semaphore('exports:{0}', { limit: 2, onBusy: 'skip' })
  async tryRun(region: string): Promise<string> {
    return `ran ${region}`;
  }
}

describe('LockService.semaphore and @Semaphore', () => {
  it('runs at most `limit` decorated calls at once, skips when full, and shares the semaphore with LockService', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        LockModule.forRoot({ redis: server.redis.url, keyPrefix: uniquePrefix('sem-nest'), shutdownGraceMs: 1 }),
      ],
      providers: [Exports],
    }).compile();
    const app = await moduleRef.init();
    try {
      const exportsService = app.get(Exports);
      const results = await Promise.all(Array.from({ length: 12 }, () => exportsService.run('eu')));
      expect(results).toEqual(Array.from({ length: 12 }, () => 'exported eu'));
      expect(exportsService.maxInside).toBeLessThanOrEqual(2);
      expect(new Set(exportsService.seen).size).toBe(12);
      const sem: Semaphore = app.get(LockService).semaphore('exports:eu', { limit: 2 });
      const both = await sem.acquire({ permits: 2 });
      expect(await exportsService.tryRun('eu')).toBeUndefined();
      expect(await exportsService.tryRun('us')).toBe('ran us');
      await both.release();
      expect(await exportsService.tryRun('eu')).toBe('ran eu');
    } finally {
      await app.close();
    }
  });

  it('rejects bad decorator options where the decorator is applied', () => {
    const declare = (options: object): void => {
      class Bad {
        @Semaphore('k', options as { limit: number })
        async m(): Promise<void> {}
      }
      void Bad;
    };
    expect(() => declare({})).toThrow(LockConfigError);
    expect(() => declare({ limit: 0 })).toThrow(LockConfigError);
    expect(() => declare({ limit: 2, fair: true })).toThrow(LockConfigError);
    expect(() => declare({ limit: 2, leaseMs: 1 })).toThrow(LockConfigError);
    expect(() => declare({ limit: 2, onBusy: 'never' })).toThrow(LockConfigError);
    expect(() => declare({ limit: 2, onBusy: 'skip', waitMs: 10 })).not.toThrow();
  });
});

describe('multi-process', () => {
  const observer = redisForFile({ own: true });
  const worker = workersForFile();
  const spawn = (env: Record<string, string>): ChildScript =>
    worker('sem-worker', { REDIS: server.redis.url, OBS: observer.redis.url, PERMITS: '3', ...env });

  it('4 processes with 3 flows each never hold more than 3 permits at once', async () => {
    const PREFIX = uniquePrefix('sem-mp');
    // A long lease, as in the setLimit test below: the bound checked is the limit's, not a lease's.
    const workers = Array.from({ length: 4 }, (_, i) =>
      spawn({ PREFIX, FLOWS: '3', OPS: '15', NAME: `p${i}`, LEASE_MS: '10000' }),
    );
    await Promise.all(workers.map((w) => w.succeeded()));
    expect(Number(await observer.admin.get(`${PREFIX}entries`))).toBe(4 * 3 * 15);
    expect(Number(await observer.admin.get(`${PREFIX}max`))).toBeLessThanOrEqual(3);
    expect(Number(await observer.admin.get(`${PREFIX}max`))).toBeGreaterThan(1);
    expect(Number(await observer.admin.get(`${PREFIX}inside`))).toBe(0);
  });

  it('setLimit up and down under load: every grant respects the limit in force when it was made', async () => {
    const PREFIX = uniquePrefix('sem-limit');
    const keys = semKeys(PREFIX, 'sem');
    // A long lease: the observer counts a holder inside until its callback ends, so a worker
    // process stalled past a 1 s lease on a loaded machine (its permits lapse, its signal is
    // dead, and a new holder may take them) would read as more permits inside than the limit.
    // That case is the lease's, tested on its own; this test is about the limit.
    const workers = Array.from({ length: 4 }, (_, i) =>
      spawn({ PREFIX, FLOWS: '3', UNTIL_STOP: '1', TWO_PERMIT_FLOWS: '1', NAME: `p${i}`, LEASE_MS: '10000' }),
    );
    const control = engine({ keyPrefix: PREFIX }).semaphore('sem', { limit: 3 });
    const stats = async (): Promise<Record<string, string>> => observer.admin.hgetall(`${PREFIX}phase-stats`);
    // Polls the observer, which the workers write to; the condition is a count, not a time. A
    // raise is given until its phase's peak passes the limit before it (or 2 000 entries), so
    // that a loaded machine's slow turns do not read as a raise that did not take effect.
    const enteredIn = async (phase: string, n: number, peakAbove = 0): Promise<void> => {
      const done = (s: Record<string, string>): boolean => {
        const entries = Number(s[`${phase}:entries`] ?? 0);
        return entries >= n && (Number(s[`${phase}:max`] ?? 0) > peakAbove || entries >= 2_000);
      };
      while (!done(await stats())) {
        await Promise.race([workers[0].exited, new Promise((r) => setTimeout(r, 20))]);
        if (workers.some((w) => w.child.exitCode !== null)) throw new Error('a worker exited early');
      }
    };
    // A phase's floor is a fencing token: a grant above it was made under that phase's limit
    // or a lower one. A raise is recorded before it is made, with the floor read before, so a
    // grant under either limit is checked against the higher one. A lowering is recorded once
    // it resolved, with the floor read after, so every grant above it was made under the lower
    // limit. An entry is checked against the highest limit from its phase on, since holders
    // granted after a raise may be inside beside it.
    const floor = async (): Promise<number> => Number(await server.admin.get(keys.fence));
    const phase = async (name: string, limit: number): Promise<void> => {
      const before = control.limit;
      if (limit > control.limit) {
        await observer.admin.zadd(`${PREFIX}phases`, await floor(), `${name}|${limit}`);
        await control.setLimit(limit);
      } else {
        await control.setLimit(limit);
        await observer.admin.zadd(`${PREFIX}phases`, await floor(), `${name}|${limit}`);
      }
      await enteredIn(name, 40, limit > before ? before : 0);
    };
    await observer.admin.zadd(`${PREFIX}phases`, 0, 'start|3');
    await enteredIn('start', 40);
    await phase('up5', 5);
    // Under a limit of 1 the flows that ask 2 permits wait (their ask never fits) until the next raise.
    await phase('down1', 1);
    await phase('up4', 4);
    await phase('down2', 2);
    await observer.admin.set(`${PREFIX}stop`, '1');
    await Promise.all(workers.map((w) => w.succeeded()));

    expect(await observer.admin.lrange(`${PREFIX}violations`, 0, -1)).toEqual([]);
    const s = await stats();
    expect(Number(s['down1:max'])).toBe(1);
    expect(s['up4:twos']).toBeDefined(); // a flow waiting on 2 permits through the limit of 1 got in after the raise
    expect(Number(s['down2:max'])).toBeLessThanOrEqual(2);
    // The raises took effect: more permits were inside at once than the limit before them.
    expect(Number(s['up5:max'])).toBeGreaterThan(3);
    expect(Number(s['up4:max'])).toBeGreaterThan(1);
    expect(Number(await observer.admin.get(`${PREFIX}inside`))).toBe(0);
    const done = workers.map((w) => Number(w.lines.find((l) => l.startsWith('done'))!.split(' ')[2]));
    expect(done.reduce((a, b) => a + b, 0)).toBe(Number(await observer.admin.get(`${PREFIX}entries`)));
  });

  it("a SIGKILLed holder's permits come back, and the other processes' workers get in", async () => {
    const PREFIX = uniquePrefix('sem-kill');
    // The hog's lease is 3 s: long enough that a hog starved between its grant and printing its
    // token (a loaded machine) still holds, short enough that its lapse, what this checks, comes soon.
    const hog = spawn({ PREFIX, HOG: '1', LEASE_MS: '3000' });
    const [, fence] = await hog.waitFor(/^holding (\d+)$/);
    // The workers hold a 10 s lease: one stalled past a 1 s lease on a loaded machine would lose
    // its permits and let a fourth in.
    const workers = Array.from({ length: 3 }, (_, i) =>
      spawn({ PREFIX, FLOWS: '3', OPS: '5', NAME: `p${i}`, LEASE_MS: '10000' }),
    );
    hog.kill('SIGKILL');
    await hog.exited;
    await Promise.all(workers.map((w) => w.succeeded()));
    expect(Number(await observer.admin.get(`${PREFIX}entries`))).toBe(3 * 3 * 5);
    expect(Number(await observer.admin.get(`${PREFIX}max`))).toBeLessThanOrEqual(3);
    // Every grant after the hog's has a higher token.
    const sem = engine({ keyPrefix: PREFIX }).semaphore('sem', { limit: 3 });
    const after = await sem.acquire({ permits: 3 });
    expect(await after.fencingToken()).toBeGreaterThan(Number(fence));
  });
});
