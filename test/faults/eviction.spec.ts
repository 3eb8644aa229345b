import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { Redis } from 'ioredis';
import { LockConfigError, LockLostError, LockModule, LockService } from 'lockwarden';
import { LockDashboardModule } from 'lockwarden/dashboard';
import { LockHealthIndicator } from 'lockwarden/health';
import { LockTestingModule, MemoryLockBackend } from 'lockwarden/testing';
import { LockEngine } from '../../libs/lockwarden/src/core/engine/lock-engine';
import type { LockEngineOptions } from '../../libs/lockwarden/src/core/options/engine-options';
import { clientMaker } from '../harness/clients';
import { closeNow } from '../harness/engines';
import { Lines } from '../harness/lines';
import { RedisCluster } from '../harness/redis-cluster';
import { RedisProcess } from '../harness/redis-process';
import { uniquePrefix } from '../harness/redis';

/**
 * A server that may evict lock keys: caught at startup (one warning per server, health's
 * fields, `onEvictingServer: 'refuse'`), and a holder whose key it evicted is told within a
 * second. The filler writes 100 KB cache values with a TTL of an hour beside the locks, as an
 * application sharing one Redis between its cache and its locks does.
 */
const LIMIT = ['--maxmemory', '8mb'];
let volatile: RedisProcess;
let allkeys: RedisProcess;
let plain: RedisProcess;
const engines: LockEngine[] = [];
const admins: Redis[] = [];

beforeAll(async () => {
  [volatile, allkeys, plain] = await Promise.all([
    RedisProcess.start({ args: [...LIMIT, '--maxmemory-policy', 'volatile-lru'] }),
    RedisProcess.start({ args: [...LIMIT, '--maxmemory-policy', 'allkeys-lru'] }),
    RedisProcess.start({ args: [...LIMIT, '--maxmemory-policy', 'noeviction'] }),
  ]);
});

afterAll(async () => {
  await Promise.all([volatile, allkeys, plain].map((p) => p?.stop()));
});

afterEach(async () => {
  await Promise.all(engines.splice(0).map(closeNow));
  for (const admin of admins.splice(0)) admin.disconnect();
});

function engineOn(url: string, lines: Lines, options: Partial<LockEngineOptions> = {}): LockEngine {
  const engine = new LockEngine({ redis: url, keyPrefix: uniquePrefix('evict'), ...options }, lines);
  engines.push(engine);
  return engine;
}

function adminOf(url: string): Redis {
  const admin = new Redis(url);
  admins.push(admin);
  return admin;
}

/** Resolves once the engine has read the memory policy of `count` servers (its debug line each). */
function looked(lines: Lines, count = 1): Promise<void> {
  return lines.until('debug', /maxmemory-policy/, count);
}

/** Writes 100 KB cache values with a one-hour TTL until `key` is gone from the server. */
async function fillUntilGone(admin: Redis, key: string): Promise<void> {
  const value = 'x'.repeat(100 * 1024);
  for (let i = 0; i < 5_000; i++) {
    await admin.set(`cache:${uniquePrefix('v')}${i}`, value, 'EX', 3_600);
    if ((await admin.exists(key)) === 0) return;
  }
  throw new Error(`${key} was never evicted`);
}

/** Whether `signal` aborts before a timer of `ms` fires. */
function abortsWithin(signal: AbortSignal, ms: number): Promise<'aborted' | 'timer'> {
  if (signal.aborted) return Promise.resolve('aborted');
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('timer'), ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve('aborted');
    });
  });
}

describe('a server that may evict lock keys', () => {
  it.each([
    ['volatile-lru', () => volatile],
    ['allkeys-lru', () => allkeys],
  ])('under %s: warns once at startup, and health says so', async (policy, server) => {
    const lines = new Lines();
    const engine = engineOn(server().url, lines);
    await looked(lines);
    const warnings = lines.of('warn', /may evict lock keys/);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`Redis at 127.0.0.1:${server().port}`);
    expect(warnings[0]).toContain(`maxmemory-policy ${policy}`);
    expect(warnings[0]).toMatch(/evicted while its holder still works under it/);
    expect(warnings[0]).toMatch(/noeviction/);
    expect(warnings[0]).toMatch(/a Redis of their own/);
    const report = await engine.health(2_000);
    expect(report).toMatchObject({ reachable: true, keysMayBeEvicted: true, evictionPolicy: policy, evictedKeys: 0 });

    // Read again at each health check (a fixed server shows without a restart) and at each
    // reconnection; never warned twice.
    const admin = adminOf(server().url);
    await admin.config('SET', 'maxmemory-policy', 'volatile-ttl');
    try {
      expect((await engine.health(2_000)).evictionPolicy).toBe('volatile-ttl');
      const client = engine.client as Redis;
      const back = new Promise((resolve) => client.once('ready', resolve));
      await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      await back;
      expect((await engine.health(2_000)).keysMayBeEvicted).toBe(true);
      expect(lines.of('warn', /may evict lock keys/)).toHaveLength(1);
    } finally {
      await admin.config('SET', 'maxmemory-policy', policy);
    }
  });

  it('a server with noeviction: no warning, and keysMayBeEvicted is false', async () => {
    const lines = new Lines();
    const engine = engineOn(plain.url, lines);
    await looked(lines);
    expect(lines.of('warn')).toEqual([]);
    const report = await engine.health(2_000);
    expect(report.keysMayBeEvicted).toBe(false);
    expect(report.evictionPolicy).toBeUndefined();
    expect(report.evictedKeys).toBeUndefined();
  });

  it("onEvictingServer: 'refuse' fails every acquire with a LockConfigError naming the policy, writing nothing", async () => {
    const lines = new Lines();
    const engine = engineOn(volatile.url, lines, { onEvictingServer: 'refuse' });
    const prefix = engine.options.keyPrefix;
    // Before the first look is done, an acquire waits for it: no race with startup.
    const refused = await engine.acquire('order:1').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(LockConfigError);
    expect((refused as Error).message).toMatch(/maxmemory-policy volatile-lru/);
    expect((refused as Error).message).toMatch(/onEvictingServer is 'refuse'/);
    await expect(engine.tryAcquire('order:2')).rejects.toBeInstanceOf(LockConfigError);
    await expect(engine.semaphore('pool', { limit: 2 }).acquire()).rejects.toBeInstanceOf(LockConfigError);
    await expect(engine.acquireRead('doc')).rejects.toBeInstanceOf(LockConfigError);
    await expect(engine.acquireWrite('doc')).rejects.toBeInstanceOf(LockConfigError);
    const admin = adminOf(volatile.url);
    expect(await admin.keys(`*${prefix}*`)).toEqual([]);

    // 'warn' (the default) on the same server takes locks.
    const warned = engineOn(volatile.url, new Lines());
    await (await warned.acquire('order:1')).release();
  });

  it("onEvictingServer: 'refuse' on a server that keeps its keys takes locks", async () => {
    const engine = engineOn(plain.url, new Lines(), { onEvictingServer: 'refuse' });
    const handle = await engine.acquire('order:1');
    expect(await handle.release()).toBe(true);
  });

  it('rejects a bad onEvictingServer before anything touches Redis', () => {
    expect(() => new LockEngine({ redis: plain.url, onEvictingServer: 'ignore' as never })).toThrow(
      /onEvictingServer must be 'warn' or 'refuse'/,
    );
  });
});

describe('a holder whose key was evicted', () => {
  it.each([
    ['volatile-lru', () => volatile],
    ['allkeys-lru', () => allkeys],
  ])('under %s: is told within one second, and another instance may take the lock', async (_policy, server) => {
    const admin = adminOf(server().url);
    // The cache values of an earlier test would leave no room to take the lock.
    await admin.flushall();
    const lines = new Lines();
    const holder = engineOn(server().url, lines, { leaseMs: 30_000 });
    await looked(lines);
    const key = `${holder.options.keyPrefix}{invoice:7}`;
    const held = await holder.acquire('invoice:7');
    expect(await admin.exists(key)).toBe(1);
    await fillUntilGone(admin, key);
    // From the moment the key is gone, the holder hears of it within a second, not at its
    // next renewal (10 s away).
    expect(await abortsWithin(held.signal, 1_000)).toBe('aborted');
    const reason = held.signal.reason as LockLostError;
    expect(reason).toBeInstanceOf(LockLostError);
    expect(reason.message).toMatch(/evicted/);
    expect(reason.message).toContain(`Redis at 127.0.0.1:${server().port}`);
    const report = await holder.health(2_000);
    expect(report.evictedKeys).toBeGreaterThan(0);
    // The lock is free in Redis: another instance takes it, and only the told holder had it before.
    const other = engineOn(server().url, new Lines(), { keyPrefix: holder.options.keyPrefix });
    const taken = await other.tryAcquire('invoice:7');
    expect(taken).not.toBeNull();
    await taken!.release();
  });
});

describe.each(['node-redis', 'glide'] as const)('through a given %s client', (kind) => {
  const clients = clientMaker(kind);
  afterEach(async () => {
    await Promise.all(engines.splice(0).map(closeNow));
    await clients.closeClients();
  });

  it('warns of an evicting server once, and tells a holder whose key was evicted', async () => {
    const admin = adminOf(volatile.url);
    await admin.flushall();
    const lines = new Lines();
    const holder = new LockEngine(
      { ...(await clients.connect(volatile.url)), keyPrefix: uniquePrefix('evict-given'), leaseMs: 30_000 },
      lines,
    );
    engines.push(holder);
    await looked(lines);
    expect(lines.of('warn', /may evict lock keys \(maxmemory-policy volatile-lru/)).toHaveLength(1);
    expect(await holder.health(2_000)).toMatchObject({ keysMayBeEvicted: true, evictionPolicy: 'volatile-lru' });
    const held = await holder.acquire('invoice:8');
    await fillUntilGone(admin, `${holder.options.keyPrefix}{invoice:8}`);
    expect(await abortsWithin(held.signal, 1_000)).toBe('aborted');
    expect((held.signal.reason as Error).message).toMatch(/evicted/);
  });
});

describe('a connection that came back', () => {
  it('has every held lock looked at at once: a Redis restarted without persistence lost them', async () => {
    const own = await RedisProcess.start();
    try {
      const lines = new Lines();
      const holder = engineOn(own.url, lines, { leaseMs: 30_000 });
      const held = await holder.acquire('ledger:1');
      const client = holder.client as Redis;
      const back = new Promise((resolve) => client.once('ready', resolve));
      await own.kill();
      await own.restart();
      await back;
      // From the moment the connection is back, the holder hears of it within a second, not at
      // its next renewal (10 s away).
      expect(await abortsWithin(held.signal, 1_000)).toBe('aborted');
      expect((held.signal.reason as Error).message).toMatch(/when the connection to .* came back/);
    } finally {
      await Promise.all(engines.splice(0).map(closeNow));
      await own.stop();
    }
  });
});

describe('where the policy cannot be read', () => {
  it('an ACL user without INFO: said once, naming the rule that allows it', async () => {
    const admin = adminOf(volatile.url);
    await admin.call('ACL', 'SETUSER', 'noinfo', 'on', '>pw', '~*', '&*', '+@all', '-info');
    const lines = new Lines();
    const engine = engineOn(`redis://noinfo:pw@127.0.0.1:${volatile.port}`, lines);
    await lines.until('warn', /Could not check whether/);
    expect(lines.of('warn', /Could not check whether/)).toHaveLength(1);
    expect(lines.of('warn', /Could not check whether/)[0]).toMatch(/ACL SETUSER <user> \+info/);
    // Locks still work.
    await (await engine.acquire('k')).release();
    expect((await engine.health(2_000)).keysMayBeEvicted).toBe(false);
  });

  it('in memory (LockTestingModule): no eviction check, and health says no key may be evicted', async () => {
    const lines = new Lines();
    const engine = new LockEngine({ instanceId: 'memory' }, lines, new MemoryLockBackend());
    engines.push(engine);
    await (await engine.acquire('k')).release();
    expect((await engine.health()).keysMayBeEvicted).toBe(false);
    expect(lines.of('warn')).toEqual([]);
    const moduleRef = await Test.createTestingModule({ imports: [LockTestingModule.forRoot()] }).compile();
    try {
      const report = await moduleRef.get(LockService).health();
      expect(report.keysMayBeEvicted).toBe(false);
      expect(report.evictionPolicy).toBeUndefined();
    } finally {
      await moduleRef.close();
    }
  });
});

describe('a Cluster where one master evicts', () => {
  let cluster: RedisCluster;

  beforeAll(async () => {
    cluster = await RedisCluster.start({ masters: 3 });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('warns of that master alone, and health says keys may be evicted', async () => {
    const [evicting, ...others] = cluster.nodes;
    const admin = new Redis(evicting.url);
    admins.push(admin);
    await admin.config('SET', 'maxmemory', '64mb');
    await admin.config('SET', 'maxmemory-policy', 'volatile-lru');
    const lines = new Lines();
    const engine = engineOn('', lines, { redis: { cluster: cluster.startupNodes } });
    await looked(lines, 3);
    const warnings = lines.of('warn', /may evict lock keys/);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`127.0.0.1:${evicting.port}`);
    for (const other of others) expect(warnings[0]).not.toContain(`:${other.port}`);
    expect(await engine.health(2_000)).toMatchObject({ keysMayBeEvicted: true, evictionPolicy: 'volatile-lru' });
  });
});

describe('in a Nest app', () => {
  @Controller('health')
  class HealthController {
    constructor(
      private readonly health: HealthCheckService,
      private readonly locks: LockHealthIndicator,
    ) {}

    @Get()
    @HealthCheck()
    check() {
      return this.health.check([() => this.locks.isHealthy('locks', { timeoutMs: 2_000 })]);
    }
  }

  it('the terminus indicator and the dashboard say "up, with a warning"', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        TerminusModule.forRoot({ logger: false }),
        LockModule.forRoot({ redis: volatile.url, keyPrefix: uniquePrefix('evict-nest'), isGlobal: true }),
        LockDashboardModule.forRoot(),
      ],
      controllers: [HealthController],
      providers: [LockHealthIndicator],
    }).compile();
    moduleRef.useLogger(new Lines());
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const health = await request(app.getHttpServer()).get('/health').expect(200);
      expect(health.body.info.locks).toMatchObject({
        status: 'up',
        keysMayBeEvicted: true,
        evictionPolicy: 'volatile-lru',
        evictedKeys: expect.any(Number),
      });
      expect(health.body.info.locks.warning).toMatch(/may evict lock keys \(maxmemory-policy volatile-lru\)/);
      const state = await request(app.getHttpServer()).get('/locks/api/state').expect(200);
      expect(state.body.eviction).toMatchObject({ keysMayBeEvicted: true, evictionPolicy: 'volatile-lru' });
    } finally {
      await app.close();
    }
  });
});
