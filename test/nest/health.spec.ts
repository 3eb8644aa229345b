import { Controller, Get } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { LockModule, LockService } from 'lockwarden';
import { LockHealthIndicator } from 'lockwarden/health';
import request from 'supertest';
import { EventLog } from '../harness/event-log';
import { redisForFile, uniquePrefix } from '../harness/redis';

/** LockHealthIndicator in a real app, over real HTTP, with Redis up, down and back. */
const server = redisForFile({ own: true });
let app: INestApplication;
const events = new EventLog();

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly locks: LockHealthIndicator,
  ) {}

  /** A PING gets 2 s, room enough on a loaded machine: up means up here. */
  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.locks.isHealthy('locks', { timeoutMs: 2_000, maxWatchdogLagMs: 150 })]);
  }

  /** A short PING budget, for the stalled Redis the test waits out. */
  @Get('strict')
  @HealthCheck()
  strict() {
    return this.health.check([() => this.locks.isHealthy('locks', { timeoutMs: 300, maxWatchdogLagMs: 150 })]);
  }
}

beforeAll(async () => {
  const moduleRef = await Test.createTestingModule({
    imports: [
      TerminusModule.forRoot({ logger: false }),
      LockModule.forRoot({
        redis: server.redis.url,
        keyPrefix: uniquePrefix('health'),
        leaseMs: 3_000,
        onEvent: events.listener,
      }),
    ],
    controllers: [HealthController],
    providers: [LockHealthIndicator],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  server.atEnd(() => app.close());
});

describe('LockHealthIndicator', () => {
  it('is up with its details while Redis answers', async () => {
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    expect(res.body.info.locks).toMatchObject({
      status: 'up',
      servers: 1,
      serversUp: 1,
      scriptsLoaded: expect.any(Boolean),
      heldLocks: 0,
      pingMs: expect.any(Number),
    });
  });

  it('is what LockService.health() reports too, with the locks this process holds', async () => {
    const locks = app.get(LockService);
    const held = await locks.acquire('health-held');
    const report = await locks.health();
    expect(report).toMatchObject({ reachable: true, servers: 1, serversUp: 1, heldLocks: 1 });
    await held.release();
  });

  it('reports the lock scripts as loaded: the engine loads them when it connects', async () => {
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    expect(res.body.info.locks.scriptsLoaded).toBe(true);
  });

  it('is down while the watchdog runs late', async () => {
    const lock = await app.get(LockService).acquire('lagging');
    // Renewal is due 1 s in (a third of the 3 s lease). Stall the event loop until 1.6 s, like a
    // long GC pause: that round runs 600 ms late, still well before the lease is at risk.
    const renewed = events.next({ type: 'renewed', key: 'lagging' });
    const until = performance.now() + 1_600;
    while (performance.now() < until) {
      // busy: a synchronous stall, like a long GC pause
    }
    await renewed;
    const res = await request(app.getHttpServer()).get('/health').expect(503);
    expect(res.body.error.locks).toMatchObject({
      status: 'down',
      message: expect.stringMatching(/watchdog runs \d+ ms late/),
    });
    await lock.release();
  });

  it('is down with "no answer" while Redis is stalled, and up again once it runs', async () => {
    server.redis.process!.freeze();
    try {
      const stalled = await request(app.getHttpServer()).get('/health/strict').expect(503);
      expect(stalled.body.error.locks).toMatchObject({ status: 'down', serversUp: 0, failure: 'no-answer' });
      expect(stalled.body.error.locks.message).toBe('Redis is unreachable (no answer): no answer within 300 ms');
    } finally {
      server.redis.process!.thaw();
    }
    await request(app.getHttpServer()).get('/health').expect(200);
  });

  it('is down with "refused" while Redis is unreachable, and up again once it is back', async () => {
    await server.redis.process!.kill();
    const down = await request(app.getHttpServer()).get('/health').expect(503);
    expect(down.body.error.locks).toMatchObject({ status: 'down', serversUp: 0, failure: 'refused' });
    // Said in the library's words, never as the client's "maxRetriesPerRequest" advice.
    expect(down.body.error.locks.message).toMatch(/^Redis is unreachable \(connection refused or lost\): /);
    expect(down.body.error.locks.message).not.toMatch(/maxRetriesPerRequest|no answer/);
    await server.redis.process!.restart();
    await app.get(LockService).withLock('back', () => undefined, { waitMs: 2_000 });
    await request(app.getHttpServer()).get('/health').expect(200);
  });
});
