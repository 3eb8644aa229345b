import { Controller, Get } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LeadershipRegistry, LockBackendError, LockEngine, LockModule, LockTimeoutError, Locked } from 'lockwarden';
import request from 'supertest';
import { documentedAclRule } from '../harness/acl-rule';
import { EventLog } from '../harness/event-log';
import { Lines } from '../harness/lines';
import { redisForFile, uniquePrefix } from '../harness/redis';
import { closeNow } from '../harness/engines';
import { checkScheduledOptions } from '../../libs/lockwarden/src/core/schedule/scheduled-options';
import { everySchedule } from '../../libs/lockwarden/src/core/schedule/tick-schedule';

/**
 * What the server refuses is said as a refusal: an ACL user without a command Lockwarden needs
 * fails a contended acquire at once with LockBackendError naming the command and the rule, and
 * a route answers 503, never "busy" after the wait. The rule docs/configuration.md gives is
 * read from the page itself and proved enough: an engine connected as a user with exactly that
 * rule takes, waits for, hands off, extends and releases every kind of lock.
 */
// A server of its own: the test adds ACL users to it.
const server = redisForFile({ own: true });
const PASSWORD = 'refusals-test';

/** The rule of docs/configuration.md's "The Redis user", as ACL SETUSER's arguments after the user name. */
const documentedRule = (): string[] => documentedAclRule(PASSWORD);

/** Adds `user` with `rule`, and gives the URL that connects as that user. */
async function userWith(user: string, rule: string[]): Promise<string> {
  await server.admin.call('ACL', 'SETUSER', user, 'reset', ...rule);
  const url = new URL(server.redis.url);
  url.username = user;
  url.password = PASSWORD;
  return url.toString();
}

/** A key prefix under the documented rule's `lock:`, of this test's own. */
const prefixUnderRule = (name: string): string => `lock:${uniquePrefix(name)}`;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function engineAs(url: string, keyPrefix: string, lines: Lines, events?: EventLog): LockEngine {
  const engine = new LockEngine({ redis: url, keyPrefix, metrics: false, onEvent: events?.listener }, lines);
  cleanups.push(() => closeNow(engine));
  return engine;
}

describe('an ACL user with the rule docs/configuration.md gives', () => {
  it('is enough for every kind of lock, and the check at connect finds nothing missing', async () => {
    const url = await userWith('lockwarden', documentedRule());
    const keyPrefix = prefixUnderRule('enough');
    const lines = new Lines();
    const events = new EventLog();
    const a = engineAs(url, keyPrefix, lines, events);
    const b = engineAs(url, keyPrefix, lines, events);
    await lines.until('debug', /may run every command Lockwarden needs/, 2);

    // Uncontended, then contended: b waits in line, and a's release hands it the lock.
    const held = await a.acquire('order:1');
    const waiting = events.next({ type: 'waiting', key: 'order:1' });
    const next = b.acquire('order:1', { waitMs: 30_000 });
    await waiting;
    const handedOff = events.next({ type: 'acquired', key: 'order:1' });
    expect(await held.release()).toBe(true);
    const second = await next;
    expect(await handedOff).toMatchObject({ handedOff: true });
    await second.extend(60_000);
    expect(await second.fencingToken()).toBeGreaterThan(0);
    expect(await second.release()).toBe(true);

    // A semaphore whose third caller waits for a permit.
    const pool = a.semaphore('pool', { limit: 2 });
    const [p1, p2] = [await pool.acquire(), await pool.acquire()];
    const third = b.semaphore('pool', { limit: 2 }).acquire({ waitMs: 30_000 });
    expect(await p1.release()).toBe(true);
    expect(await (await third).release()).toBe(true);
    expect(await p2.release()).toBe(true);

    // A read/write lock: two readers, and a writer that waits for them.
    const r1 = await a.acquireRead('doc');
    const r2 = await b.acquireRead('doc');
    const writer = a.acquireWrite('doc', { waitMs: 30_000 });
    await r1.release();
    await r2.release();
    expect(await (await writer).release()).toBe(true);

    // A scheduled job's tick: claimed, run under its lock, recorded.
    const job = a.scheduledJob('nightly', everySchedule(3_600_000), checkScheduledOptions({}, 'test'));
    expect(await job.run(async () => 'ran')).toBe('ran');

    // Leader election, with its term log.
    const registry = new LeadershipRegistry(a);
    cleanups.push(() => registry.close());
    const leadership = registry.leadership('leader');
    await leadership.campaign();
    expect(leadership.isLeader()).toBe(true);
    await leadership.resign();

    expect(lines.of('warn')).toEqual([]);
  });
});

describe('a renewal the ACL refuses', () => {
  it('is logged as the refusal, once, and the lock is lost only when its lease runs out', async () => {
    const url = await userWith('renewals', documentedRule());
    const lines = new Lines();
    const events = new EventLog();
    const a = engineAs(url, prefixUnderRule('renewal'), lines, events);
    const held = await a.acquire('order:1', { leaseMs: 3_000 });
    const lost = events.next({ type: 'lost', key: 'order:1' });
    // From now on renew.lua's PEXPIRE is refused: the lease cannot be kept, nor proved ours.
    await server.admin.call('ACL', 'SETUSER', 'renewals', '-pexpire');
    expect(await lost).toMatchObject({ reason: expect.stringContaining('lease ran out before a renewal succeeded') });
    expect(held.signal.aborted).toBe(true);
    expect(events.count({ type: 'renewFailed', key: 'order:1' })).toBeGreaterThan(0);
    // Said as what it is, once for all the renewals it failed: never as Redis being unreachable.
    expect(lines.of('warn', /Redis refused the command PEXPIRE in script renew/)).toHaveLength(1);
    expect(lines.of('warn', /reachable/)).toEqual([]);
  });
});

describe('the same rule without +time', () => {
  let url: string;

  beforeAll(async () => {
    url = await userWith(
      'no-time',
      documentedRule().filter((part) => part !== '+time'),
    );
  });

  it('is warned of once at connect, naming TIME and the rule that allows it', async () => {
    const lines = new Lines();
    engineAs(url, prefixUnderRule('probe'), lines);
    await lines.until('warn', /may not run TIME\b/);
    expect(lines.of('warn', /may not run TIME\b/)).toHaveLength(1);
    expect(lines.of('warn')[0]).toContain('ACL SETUSER <user> +time');
  });

  it('fails a contended acquire at once with LockBackendError naming TIME and the rule, never as busy', async () => {
    const lines = new Lines();
    const keyPrefix = prefixUnderRule('contended');
    const a = engineAs(url, keyPrefix, lines);
    const b = engineAs(url, keyPrefix, lines);
    // Uncontended: a plain SET NX, which needs no TIME.
    await a.acquire('order:1');
    // A wait this long would outlast the test: the answer must come before it.
    for (let i = 0; i < 2; i++) {
      const err = await b.acquire('order:1', { waitMs: 600_000 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LockBackendError);
      expect(err).not.toBeInstanceOf(LockTimeoutError);
      const message = (err as Error).message;
      expect(message).toContain('Redis refused the command TIME in script acquire');
      expect(message).toContain('ACL SETUSER <user> +time');
      expect(message).not.toMatch(/Check that Redis is reachable/);
    }
    // Said at WARN once, however many acquires it stops.
    expect(lines.of('warn', /refused the command TIME/)).toHaveLength(1);
  });

  it('names TIME and the script for a semaphore, a read/write lock, a tick claim and an election', async () => {
    const lines = new Lines();
    const a = engineAs(url, prefixUnderRule('every-kind'), lines);
    const job = a.scheduledJob('nightly', everySchedule(3_600_000), checkScheduledOptions({}, 'test'));
    const registry = new LeadershipRegistry(a);
    cleanups.push(() => registry.close());
    const cases: [string, () => Promise<unknown>][] = [
      ['sem-acquire', () => a.semaphore('pool', { limit: 1 }).acquire({ waitMs: 600_000 })],
      ['rw-acquire', () => a.acquireWrite('doc', { waitMs: 600_000 })],
      ['tick-claim', () => job.run(async () => 'ran')],
      ['acquire', () => registry.leadership('leader').campaign()],
    ];
    for (const [script, call] of cases) {
      const err = await call().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LockBackendError);
      expect((err as Error).message).toContain(`Redis refused the command TIME in script ${script}`);
    }
    expect(lines.of('warn', /refused the command TIME/)).toHaveLength(1);
  });

  it('answers 503 over HTTP, not 409, when a route finds its lock held', async () => {
    const keyPrefix = prefixUnderRule('route');

    @Controller('orders')
    class OrdersController {
      @Get('update')
      @Locked('order:update', { waitMs: 30_000 })
      async update(): Promise<string> {
        return 'updated';
      }
    }

    const lines = new Lines();
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: url, keyPrefix, metrics: false })],
      controllers: [OrdersController],
    }).compile();
    moduleRef.useLogger(lines);
    const app: INestApplication = moduleRef.createNestApplication();
    app.useLogger(lines);
    await app.init();
    cleanups.push(() => app.close());
    // Another instance holds the lock, as the default user: the route's acquire is contended.
    const other = new LockEngine({ redis: server.redis.url, keyPrefix, metrics: false });
    cleanups.push(() => closeNow(other));
    const held = await other.acquire('order:update');

    const res = await request(app.getHttpServer()).get('/orders/update');
    expect(res.status).toBe(503);
    const told = lines.of('warn', /refused the command TIME in script acquire/).length;
    expect(told).toBeGreaterThan(0);
    // Another request meets the same refusal: it answers the same, and nothing more is logged.
    expect((await request(app.getHttpServer()).get('/orders/update')).status).toBe(503);
    expect(lines.of('warn', /refused the command TIME/)).toHaveLength(told);
    await held.release();
  });
});
