import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  LeaderOnly,
  LeadershipRegistry,
  LockAbortedError,
  LockConfigError,
  LockEngine,
  LockInterruptedError,
  LockLostError,
  LockModule,
  LockService,
  OnLeadership,
} from 'lockwarden';
import type { LeaderChange, LeaderTerm, Leadership } from 'lockwarden';
import { MemoryLockBackend } from 'lockwarden/testing';
import { runWorker } from '../harness/child';
import type { ChildScript } from '../harness/child';
import { aborted } from '../harness/event-log';
import { redisForFile, startRedis, uniquePrefix } from '../harness/redis';
import { Observer } from '../invariant/observer';

const server = redisForFile();
const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** One candidate process, in this process: its own engine (instance id) and registry. */
function candidate(
  prefix: string,
  instanceId: string,
  leaseMs = 30_000,
): { engine: LockEngine; registry: LeadershipRegistry } {
  const engine = new LockEngine({ redis: server.redis.url, keyPrefix: prefix, instanceId, leaseMs, metrics: false });
  const registry = new LeadershipRegistry(engine);
  cleanups.push(async () => {
    await registry.close();
    await engine.close();
  });
  return { engine, registry };
}

/** Collects what changes() yields, and resolves waits as soon as what they wait for has arrived. */
class Watcher {
  readonly changes: LeaderChange[] = [];
  private readonly stop = new AbortController();
  private waiters: (() => void)[] = [];
  readonly done: Promise<void>;

  constructor(leadership: Leadership) {
    this.done = (async () => {
      for await (const change of leadership.changes({ signal: this.stop.signal })) {
        this.changes.push(change);
        for (const wake of this.waiters.splice(0)) wake();
      }
    })();
    cleanups.push(() => this.close());
  }

  /** Resolves once `count` changes have arrived. */
  async count(count: number): Promise<LeaderChange[]> {
    while (this.changes.length < count) await new Promise<void>((resolve) => this.waiters.push(resolve));
    return this.changes;
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.done;
  }
}

function summary(changes: LeaderChange[]): string[] {
  return changes.map((c) =>
    c.type === 'elected' ? `elected ${c.term.instanceId}` : `ended ${c.term.instanceId} ${c.reason}`,
  );
}

/** Checks the guarantees of changes(): every term once, in fencing-token order, each ended at most once after it began. */
function expectWellFormed(changes: LeaderChange[]): void {
  const elected = changes.filter((c) => c.type === 'elected').map((c) => c.term.fencingToken);
  expect(elected).toEqual([...new Set(elected)].sort((a, b) => a - b));
  let open: number | undefined;
  for (const c of changes) {
    if (c.type === 'elected') open = c.term.fencingToken;
    else {
      expect(c.term.fencingToken).toBe(open);
      open = undefined;
    }
  }
}

async function redisNowMs(): Promise<number> {
  const [s, us] = await server.admin.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('input validation, before anything reaches Redis', () => {
  it('rejects bad names, options and callbacks with LockConfigError', async () => {
    const prefix = uniquePrefix('lead-valid');
    const { registry } = candidate(prefix, 'a');
    expect(() => registry.leadership('')).toThrow(LockConfigError);
    expect(() => registry.leadership(42 as unknown as string)).toThrow(/non-empty string, got 42/);
    expect(() => registry.leadership('n'.repeat(2_000))).toThrow(/limit is 1024/);
    expect(() => registry.leadership('a\uD800')).toThrow(/lone UTF-16 surrogate/);
    const leadership = registry.leadership('jobs');
    expect(registry.leadership('jobs')).toBe(leadership);
    await expect(leadership.campaign('soon' as never)).rejects.toThrow(LockConfigError);
    await expect(leadership.campaign({ signal: {} as AbortSignal })).rejects.toThrow(/signal must be an AbortSignal/);
    await expect(leadership.campaign({ waitMs: 5 } as never)).rejects.toThrow(/Unknown campaign\(\) option "waitMs"/);
    await expect(leadership.contend({ signal: 1 } as never)).rejects.toThrow(LockConfigError);
    expect(() => leadership.changes({ signal: 'x' } as never)).toThrow(LockConfigError);
    expect(() => leadership.onChange(undefined as never)).toThrow(LockConfigError);
    await expect(leadership.runIfLeader(undefined as never)).rejects.toThrow(LockConfigError);
    expect(leadership.isLeader()).toBe(false);
    expect(await server.admin.keys(`${prefix}*`)).toEqual([]);
  });

  it('rejects bad decorator arguments where the decorator is applied', () => {
    expect(() => LeaderOnly('')).toThrow(LockConfigError);
    expect(() => LeaderOnly(undefined as never)).toThrow(/non-empty string/);
    expect(() => OnLeadership('jobs', 'won' as never)).toThrow(/'gained' or 'lost', got "won"/);
    expect(() => OnLeadership('', 'gained')).toThrow(LockConfigError);
  });
});

describe('campaign, isLeader, leader(), resign', () => {
  it('campaigns on when its lease ran out between the grant and the term (a stalled process), and leads', async () => {
    const prefix = uniquePrefix('lead-stall');
    const leaseMs = 300;
    const { engine, registry } = candidate(prefix, 'a', leaseMs);
    const jobs = registry.leadership('jobs');
    // Stall the process past the lease right after the first grant is asked for: the grant is
    // read only once its lease is over, and reading its token finds it lost.
    const realAcquire = engine.acquire.bind(engine);
    let stalled = false;
    engine.acquire = ((key: string, options?: Parameters<LockEngine['acquire']>[1]) => {
      const granted = realAcquire(key, options);
      if (!stalled) {
        stalled = true;
        setImmediate(() => {
          const until = performance.now() + 2 * leaseMs;
          while (performance.now() < until) {
            // the process is busy: no timer, no socket read
          }
        });
      }
      return granted;
    }) as LockEngine['acquire'];
    await jobs.campaign();
    expect(stalled).toBe(true);
    expect(jobs.isLeader()).toBe(true);
    await jobs.resign();
  });

  it('elects one candidate at a time, hands off on resign, and records each term by Redis time', async () => {
    const prefix = uniquePrefix('lead-basic');
    const a = candidate(prefix, 'a').registry.leadership('jobs');
    const b = candidate(prefix, 'b').registry.leadership('jobs');
    const observer = candidate(prefix, 'o').registry.leadership('jobs');
    const watcher = new Watcher(observer);
    expect(await observer.leader()).toBeNull();
    expect(a.signal.aborted).toBe(true); // not leading yet

    const before = await redisNowMs();
    await a.campaign();
    expect(a.isLeader()).toBe(true);
    const termA = a.currentTerm!;
    expect(termA.instanceId).toBe('a');
    expect(termA.since.getTime()).toBeGreaterThanOrEqual(before);
    expect(termA.since.getTime()).toBeLessThanOrEqual(await redisNowMs());
    expect(await observer.leader()).toEqual(termA);
    await a.campaign(); // already leading: resolves at once
    const signalA = a.signal;
    expect(signalA.aborted).toBe(false);

    let bElected = false;
    const campaignB = b.campaign().then(() => (bElected = true));
    await watcher.count(1);
    expect(bElected).toBe(false);
    expect(b.isLeader()).toBe(false);

    await a.resign();
    expect(signalA.reason).toBeInstanceOf(LockInterruptedError);
    expect(a.isLeader()).toBe(false);
    await campaignB;
    expect(b.isLeader()).toBe(true);
    const termB = b.currentTerm!;
    expect(termB.fencingToken).toBeGreaterThan(termA.fencingToken);
    expect(await observer.leader()).toEqual(termB);

    await b.resign();
    await b.resign(); // idempotent
    expect(await observer.leader()).toBeNull();
    const changes = await watcher.count(4);
    expect(summary(changes)).toEqual(['elected a', 'ended a resigned', 'elected b', 'ended b resigned']);
    expect(changes[0]).toEqual({ type: 'elected', term: termA });
    expect(changes[2]).toEqual({ type: 'elected', term: termB });
    expectWellFormed(changes);
  });

  it('gives up waiting when the campaign signal fires, leaving nothing behind', async () => {
    const prefix = uniquePrefix('lead-abort');
    const a = candidate(prefix, 'a').registry.leadership('jobs');
    const { engine, registry } = candidate(prefix, 'b');
    const b = registry.leadership('jobs');
    await a.campaign();
    const stop = new AbortController();
    const waiting = b.campaign({ signal: stop.signal });
    stop.abort(new Error('deploy cancelled'));
    await expect(waiting).rejects.toBeInstanceOf(LockAbortedError);
    await a.resign();
    expect(await b.leader()).toBeNull();
    expect((await engine.inspect('leader:jobs')).held).toBe(false);
    expect(b.isLeader()).toBe(false);
  });

  it('resign() cancels a waiting campaign, and a campaign right after it starts afresh', async () => {
    const prefix = uniquePrefix('lead-recampaign');
    const a = candidate(prefix, 'a').registry.leadership('jobs');
    const b = candidate(prefix, 'b').registry.leadership('jobs');
    await a.campaign();
    const waiting = b.campaign();
    await b.resign();
    await expect(waiting).rejects.toBeInstanceOf(LockAbortedError);
    const again = b.campaign();
    await a.resign();
    await again;
    expect(b.isLeader()).toBe(true);
    expect(await a.leader()).toEqual(b.currentTerm);
  });

  it('resign() waits for work started under the term before the next leader is elected', async () => {
    const prefix = uniquePrefix('lead-work');
    const a = candidate(prefix, 'a').registry.leadership('jobs');
    const b = candidate(prefix, 'b').registry.leadership('jobs');
    const order: string[] = [];
    b.onChange((event) => void order.push(`b ${event}`));
    await a.campaign();
    const work = deferred();
    const running = a.runIfLeader(async () => {
      await work.promise;
      order.push('a work done');
      return 7;
    });
    const campaignB = b.campaign();
    const resigned = a.resign();
    expect(a.signal.aborted).toBe(true);
    expect(await a.runIfLeader(() => order.push('ran after resign'))).toBeUndefined();
    work.resolve();
    expect(await running).toBe(7);
    await resigned;
    await campaignB;
    expect(order).toEqual(['a work done', 'b gained']);
  });
});

describe('losing leadership', () => {
  it('aborts the signal with LockLostError, tells listeners, and contend() campaigns again', async () => {
    const prefix = uniquePrefix('lead-lost');
    // Leases with seconds of room: only the forced removal, found at a renewal, ends a term.
    const a = candidate(prefix, 'a', 3_000).registry.leadership('jobs');
    const b = candidate(prefix, 'b', 3_000).registry.leadership('jobs');
    const admin = candidate(prefix, 'admin');
    const watcher = new Watcher(admin.registry.leadership('jobs'));
    const events: string[] = [];
    const gained = { a: deferred(), b: deferred(), again: deferred() };
    a.onChange((event, term: LeaderTerm) => {
      events.push(`a ${event} ${term.fencingToken}`);
      if (event === 'gained')
        (events.filter((e) => e.startsWith('a gained')).length > 1 ? gained.again : gained.a).resolve();
    });
    b.onChange((event, term) => {
      events.push(`b ${event} ${term.fencingToken}`);
      if (event === 'gained') gained.b.resolve();
    });
    const stopA = new AbortController();
    const contendA = a.contend({ signal: stopA.signal });
    await gained.a.promise;
    const contendB = b.contend();
    const tokenA = a.currentTerm!.fencingToken;
    const signalA = a.signal;
    await watcher.count(1);

    // Taken away from outside: the holder learns it at its next renewal, then contends again.
    // That renewal may come before forceUnlock's reply is read: aborted() sees a signal already aborted.
    await admin.engine.forceUnlock('leader:jobs');
    expect(await aborted(signalA)).toBeInstanceOf(LockLostError);
    await gained.b.promise;
    expect(a.isLeader()).toBe(false);
    const tokenB = b.currentTerm!.fencingToken;
    expect(tokenB).toBeGreaterThan(tokenA);

    await b.resign(); // stops b's contend(); a is still contending and takes over
    await contendB;
    await gained.again.promise;
    expect(a.currentTerm!.fencingToken).toBeGreaterThan(tokenB);
    stopA.abort();
    await a.resign();
    await contendA;

    expect(events[0]).toBe(`a gained ${tokenA}`);
    expect(events).toContain(`a lost ${tokenA}`);
    expect(events).toContain(`b lost ${tokenB}`);
    const changes = await watcher.count(6);
    expect(summary(changes)).toEqual([
      'elected a',
      'ended a expired',
      'elected b',
      'ended b resigned',
      'elected a',
      'ended a resigned',
    ]);
    expectWellFormed(changes);
  });

  it('an observer sees a crashed leader end when its lease runs out', async () => {
    const prefix = uniquePrefix('lead-crash');
    const { engine, registry } = candidate(prefix, 'a', 500);
    const a = registry.leadership('jobs');
    const watcher = new Watcher(candidate(prefix, 'o').registry.leadership('jobs'));
    await a.campaign();
    await watcher.count(1);
    // A crash, as far as Redis can tell: renewal stops and nothing is announced.
    engine.watchdog.stop();
    const changes = await watcher.count(2);
    expect(summary(changes)).toEqual(['elected a', 'ended a expired']);
    expect((await engine.inspect('leader:jobs')).held).toBe(false);
  });
});

describe('changes()', () => {
  it('yields every term in order across many hand-offs, and a late observer starts at the current term', async () => {
    const prefix = uniquePrefix('lead-order');
    const names = ['a', 'b', 'c'];
    const ls = names.map((n) => candidate(prefix, n).registry.leadership('jobs'));
    const elected: number[] = [];
    let early: Watcher | undefined;
    let late: Watcher | undefined;
    for (let i = 0; i < 9; i++) {
      const l = ls[i % 3];
      await l.campaign();
      elected.push(l.currentTerm!.fencingToken);
      if (i === 0) {
        // An observer starts from the present: the term running when it first reads, if any.
        early = new Watcher(candidate(prefix, 'o1').registry.leadership('jobs'));
        await early.count(1);
      }
      if (i === 4) {
        late = new Watcher(candidate(prefix, 'o2').registry.leadership('jobs'));
        const first = await late.count(1);
        expect(first[0]).toEqual({ type: 'elected', term: l.currentTerm });
      }
      await l.resign();
    }
    const all = await early!.count(18);
    expect(all.filter((c) => c.type === 'elected').map((c) => c.term.fencingToken)).toEqual(elected);
    expect(summary(all).slice(0, 4)).toEqual(['elected a', 'ended a resigned', 'elected b', 'ended b resigned']);
    expectWellFormed(all);
    const fromMiddle = await late!.count(10);
    expect(fromMiddle.filter((c) => c.type === 'elected').map((c) => c.term.fencingToken)).toEqual(elected.slice(4));
    expectWellFormed(fromMiddle);
  });

  it('ends when its signal fires or the registry closes', async () => {
    const prefix = uniquePrefix('lead-end');
    const { registry } = candidate(prefix, 'a');
    const iterator = registry.leadership('jobs').changes()[Symbol.asyncIterator]();
    const next = iterator.next();
    await registry.close();
    expect(await next).toEqual({ done: true, value: undefined });
  });
});

describe('without Redis (in-memory backend)', () => {
  it('campaigns, reports and observes leaders the same way, across engines sharing the backend', async () => {
    const backend = new MemoryLockBackend();
    const [a, b] = ['a', 'b'].map((instanceId) => {
      const engine = new LockEngine({ instanceId, metrics: false }, undefined, backend);
      const registry = new LeadershipRegistry(engine, backend);
      cleanups.push(async () => {
        await registry.close();
        await engine.close();
      });
      return registry.leadership('jobs');
    });
    const watcher = new Watcher(b);
    await a.campaign();
    await watcher.count(1);
    expect(await b.leader()).toEqual(a.currentTerm);
    const campaignB = b.campaign();
    await a.resign();
    await campaignB;
    expect(await a.leader()).toEqual(b.currentTerm);
    await b.resign();
    expect(await a.leader()).toBeNull();
    expect(summary(await watcher.count(4))).toEqual(['elected a', 'ended a resigned', 'elected b', 'ended b resigned']);
  });
});

describe('@LeaderOnly and @OnLeadership in a Nest app', () => {
  const log: string[] = [];

  @Injectable()
  class Jobs {
    runs = 0;

    @LeaderOnly('nightly')
    async run(): Promise<number> {
      return ++this.runs;
    }

    @OnLeadership('nightly', 'gained')
    gained(term: LeaderTerm): void {
      log.push(`gained ${term.instanceId}`);
    }

    @OnLeadership('nightly', 'lost')
    lost(term: LeaderTerm): void {
      log.push(`lost ${term.instanceId}`);
    }
  }

  async function app(prefix: string, instanceId: string) {
    @Module({
      imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix: prefix, instanceId })],
      providers: [Jobs],
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    await moduleRef.init();
    return moduleRef;
  }

  it('runs only on the leader, campaigns at bootstrap and resigns on close so the next takes over', async () => {
    const prefix = uniquePrefix('lead-nest');
    const first = await app(prefix, 'first');
    const leadership = first.get(LockService).leadership('nightly');
    if (!leadership.isLeader()) await leadership.campaign(); // joins the bootstrap campaign
    expect(await first.get(Jobs).run()).toBe(1);

    const second = await app(prefix, 'second');
    const other = second.get(LockService).leadership('nightly');
    expect(other.isLeader()).toBe(false);
    expect(await second.get(Jobs).run()).toBeUndefined();
    expect(second.get(Jobs).runs).toBe(0);

    const takeover = other.campaign();
    await first.close();
    await takeover;
    expect(await second.get(Jobs).run()).toBe(1);
    await second.close();
    expect(log).toEqual(['gained first', 'lost first', 'gained second', 'lost second']);
  });

  it('refuses to run a @LeaderOnly method on an instance made without Nest', async () => {
    await expect(new Jobs().run()).rejects.toThrow(/has no LockService/);
  });
});

describe('three app processes with @LeaderOnly, watched from outside', () => {
  it('keeps one leader at a time through a SIGKILL and a graceful shutdown, and changes() sees every term', async () => {
    const observerRedis = await startRedis({ own: true });
    const observer = new Observer(observerRedis.url);
    const children = new Map<string, ChildScript>();
    cleanups.push(async () => {
      for (const child of children.values()) child.kill('SIGKILL');
      await Promise.all([...children.values()].map((c) => c.exited));
      observer.close();
      await observerRedis.stop();
    });
    const prefix = uniquePrefix('lead-procs');
    const watching = candidate(prefix, 'watcher');
    const watcher = new Watcher(watching.registry.leadership('jobs'));
    for (const name of ['p1', 'p2', 'p3']) {
      // A lease a loaded machine's SIGTERM, shutdown and resign fit in many times over: the
      // hand-off after a resign must come before the lease would have run out.
      const env = {
        REDIS: server.redis.url,
        OBSERVER: observerRedis.url,
        PREFIX: prefix,
        NAME: name,
        LEASE_MS: '10000',
      };
      children.set(name, runWorker('leader-app', env));
    }
    await Promise.all([...children.values()].map((c) => c.waitFor(/^ready$/)));
    const elected = async (index: number): Promise<LeaderTerm> => {
      const change = (await watcher.count(index + 1))[index];
      expect(change.type).toBe('elected');
      return change.term;
    };
    const app = (term: LeaderTerm): ChildScript => children.get(term.instanceId)!;

    // The first leader runs its job.
    const first = await elected(0);
    await app(first).waitFor(new RegExp(`^ran ${first.fencingToken}$`));

    // SIGKILL it, perhaps in the middle of a run: its sections are revoked, since a dead
    // process cannot be told anything. Another instance is elected once its lease runs out.
    await observer.revoking('leader:jobs', async () => {
      app(first).kill('SIGKILL');
      await app(first).exited;
      return first.fencingToken;
    });
    children.delete(first.instanceId);
    expect((await watcher.count(2))[1]).toEqual({ type: 'ended', term: first, reason: 'expired' });
    const second = await elected(2);
    expect(second.instanceId).not.toBe(first.instanceId);
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    await app(second).waitFor(new RegExp(`^ran ${second.fencingToken}$`));

    // SIGTERM the new leader: it resigns on shutdown, so the last one takes over before the
    // lease it held would have run out, by Redis's own clock.
    const info = await watching.engine.inspect('leader:jobs');
    expect(info.fencingToken).toBe(second.fencingToken);
    const leaseEndsBy = (await redisNowMs()) + info.leaseLeftMs;
    // 'close' comes after the child's output has all been read; 'exit' may come before.
    const secondClosed = new Promise((resolve) => app(second).child.once('close', resolve));
    app(second).kill('SIGTERM');
    await secondClosed;
    expect(app(second).lines).toContain(`lost ${second.fencingToken}`);
    children.delete(second.instanceId);
    expect((await watcher.count(4))[3]).toEqual({ type: 'ended', term: second, reason: 'resigned' });
    const third = await elected(4);
    expect(third.since.getTime()).toBeLessThan(leaseEndsBy);
    expect([first.instanceId, second.instanceId]).not.toContain(third.instanceId);
    await app(third).waitFor(new RegExp(`^ran ${third.fencingToken}$`));
    expect(await watching.registry.leadership('jobs').leader()).toEqual(third);

    app(third).kill('SIGTERM');
    await app(third).exited;
    children.delete(third.instanceId);
    const changes = await watcher.count(6);
    expect(changes[5]).toEqual({ type: 'ended', term: third, reason: 'resigned' });
    expectWellFormed(changes);
    expect(await observer.violations()).toEqual([]);
    expect(await observer.entries()).toBeGreaterThanOrEqual(3);
  }, 120_000);
});
