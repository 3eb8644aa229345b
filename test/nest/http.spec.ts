import { Controller, Get, Injectable, Param, Post } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockEngine, LockModule, LockService, Locked, Semaphore } from 'lockwarden';
import { runWorker } from '../harness/child';
import { Observable, Subject } from 'rxjs';

import request from 'supertest';
import { aborted, EventLog } from '../harness/event-log';
import { freePort } from '../harness/free-port';
import { redisForFile, uniquePrefix } from '../harness/redis';

const server = redisForFile();
let app: INestApplication;
let prefix: string;
let other: LockEngine;
const events = new EventLog();
const stream = new Subject<string>();
/** Called once Nest subscribed to the route's Observable: values sent before that are not seen. */
let onStreamSubscribed: (() => void) | undefined;
let inside = 0;
let maxInside = 0;

@Controller('r')
class RouteController {
  constructor(readonly locks: LockService) {}

  @Get('serial')
  @Locked('route:serial')
  async serial(): Promise<{ ok: boolean }> {
    inside++;
    maxInside = Math.max(maxInside, inside);
    await server.admin.ping();
    await server.admin.ping();
    inside--;
    return { ok: true };
  }

  @Get('strict')
  @Locked('route:strict', { onBusy: 'throw' })
  async strict(): Promise<string> {
    return 'ran';
  }

  skippedRuns = 0;

  @Get('skip')
  @Locked('route:skip', { onBusy: 'skip' })
  async skip(): Promise<string> {
    this.skippedRuns++;
    return 'ran';
  }

  @Post('skip')
  @Locked('route:skip', { onBusy: 'skip' })
  async skipPost(): Promise<string> {
    this.skippedRuns++;
    return 'ran';
  }

  @Get('hinted')
  @Locked('route:hinted', { onBusy: 'throw', retryAfterMs: 4_500 })
  async hinted(): Promise<string> {
    return 'ran';
  }

  @Get('pool/:region')
  @Semaphore('route:pool:{0}', { limit: 2, onBusy: 'throw' })
  async pool(@Param('region') region: string): Promise<{ region: string; token: number | undefined }> {
    return { region, token: await this.locks.current()?.fencingToken() };
  }

  @Get('stream')
  @Locked('route:stream')
  async stream(): Promise<Observable<string>> {
    return new Observable<string>((subscriber) => {
      const subscription = stream.subscribe(subscriber);
      onStreamSubscribed?.();
      return subscription;
    });
  }

  @Get('lost')
  // A short lease only where the lock is taken away: the others keep the default's room.
  @Locked('route:lost', { leaseMs: 600 })
  async lost(): Promise<string> {
    const lock = this.locks.current('route:lost')!;
    await server.admin.del(`${prefix}{route:lost}`);
    await aborted(lock.signal);
    return 'finished without its lock';
  }

  @Get('bad/:id')
  @Locked('route:{1.missing}')
  async bad(@Param('id') id: string, query?: { missing?: string }): Promise<string> {
    return `${id}${query?.missing ?? ''}`;
  }

  @Get('once/:id')
  @Locked('route:once:{0}')
  async once(@Param('id') id: string): Promise<{ token: number | undefined; id: string }> {
    return { token: await this.locks.current(`route:once:${id}`)?.fencingToken(), id };
  }
}

beforeAll(async () => {
  prefix = uniquePrefix('http');
  const moduleRef = await Test.createTestingModule({
    imports: [
      LockModule.forRoot({
        redis: server.redis.url,
        keyPrefix: prefix,
        retryAfterMs: 2_000,
        onEvent: events.listener,
      }),
    ],
    controllers: [RouteController],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  other = new LockEngine({ redis: server.redis.url, keyPrefix: prefix });
  server.atEnd(
    () => app.close(),
    () => other.close(),
  );
});

describe('@Locked controller routes over HTTP', () => {
  it('serializes concurrent requests on one route', async () => {
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => request(app.getHttpServer()).get('/r/serial')),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(maxInside).toBe(1);
  });

  it('takes many locks at once in one request without Node warning of a listener leak', async () => {
    // Node prints the warning in the real process, out of the test's reach: an app of its own shows it.
    const app = runWorker('many-locks-app', { REDIS: server.redis.url, PREFIX: uniquePrefix('many'), LOCKS: '20' });
    expect(await app.exited).toBe(0);
    expect(app.lines).toContain('status 200 20');
    expect(app.stderrTail()).not.toContain('MaxListenersExceededWarning');
  }, 60_000);

  it("answers 409 with Retry-After when busy and onBusy is 'throw'", async () => {
    const held = await other.acquire('route:strict', { leaseMs: 30_000, renew: false });
    const res = await request(app.getHttpServer()).get('/r/strict');
    expect(res.status).toBe(409);
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(res.body).toMatchObject({ statusCode: 409, error: 'Conflict', code: 'LOCK_BUSY' });
    expect(JSON.stringify(res.body)).not.toContain('route:strict');
    await held.release();
    const ok = await request(app.getHttpServer()).get('/r/strict');
    expect(ok.status).toBe(200);
    expect(ok.text).toBe('ran');
  });

  it("answers an empty success when busy and onBusy is 'skip': the route's own status, so a client cannot tell", async () => {
    const routes = app.get(RouteController);
    const held = await other.acquire('route:skip', { leaseMs: 30_000, renew: false });
    const get = await request(app.getHttpServer()).get('/r/skip');
    expect(get.status).toBe(200);
    expect(get.text).toBe('');
    expect(get.headers['retry-after']).toBeUndefined();
    const post = await request(app.getHttpServer()).post('/r/skip');
    expect(post.status).toBe(201); // Nest's default for POST, as if the method had run and returned nothing
    expect(post.text).toBe('');
    expect(routes.skippedRuns).toBe(0);
    await held.release();
    const ran = await request(app.getHttpServer()).get('/r/skip');
    expect(ran.status).toBe(200);
    expect(ran.text).toBe('ran');
    expect(routes.skippedRuns).toBe(1);
  });

  it("@Semaphore routes: 409 with Retry-After while every permit is taken and onBusy is 'throw', 200 once one is back", async () => {
    const pool = other.semaphore('route:pool:eu', { limit: 2 });
    const held = [await pool.acquire({ leaseMs: 30_000 }), await pool.acquire({ leaseMs: 30_000 })];
    const busy = await request(app.getHttpServer()).get('/r/pool/eu');
    expect(busy.status).toBe(409);
    expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(busy.body)).not.toContain('route:pool');
    expect((await request(app.getHttpServer()).get('/r/pool/us')).status).toBe(200); // another key
    await held[0].release();
    const ok = await request(app.getHttpServer()).get('/r/pool/eu');
    expect(ok.status).toBe(200);
    expect(ok.body.region).toBe('eu');
    expect(ok.body.token).toBeGreaterThan(await held[1].fencingToken());
    await held[1].release();
  });

  it('sends a Retry-After hint, not the lease a renewing holder has left: decorator, module, default', async () => {
    // The holder keeps a 30 s lease; the hints say how long the work takes instead.
    const held = await other.acquire('route:hinted', { leaseMs: 30_000, renew: false });
    const strict = await other.acquire('route:strict', { leaseMs: 30_000, renew: false });
    const hinted = await request(app.getHttpServer()).get('/r/hinted');
    expect(hinted.status).toBe(409);
    expect(hinted.headers['retry-after']).toBe('5'); // 4.5 s, in whole seconds
    const moduleWide = await request(app.getHttpServer()).get('/r/strict');
    expect(moduleWide.headers['retry-after']).toBe('2'); // the module's retryAfterMs
    await held.release();
    await strict.release();

    @Controller('d')
    class DefaultController {
      @Get('busy')
      @Locked('route:default', { onBusy: 'throw' })
      async busy(): Promise<string> {
        return 'ran';
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix: prefix })],
      controllers: [DefaultController],
    }).compile();
    const plain = moduleRef.createNestApplication({ logger: false });
    await plain.init();
    try {
      const busy = await other.acquire('route:default', { leaseMs: 30_000, renew: false });
      const res = await request(plain.getHttpServer()).get('/d/busy');
      expect(res.status).toBe(409);
      expect(res.headers['retry-after']).toBe('1');
      await busy.release();
    } finally {
      await plain.close();
    }
  });

  it('holds the lock until an Observable response completes', async () => {
    const acquired = events.next({ type: 'acquired', key: 'route:stream' });
    const subscribed = new Promise<void>((resolve) => (onStreamSubscribed = resolve));
    const pending = request(app.getHttpServer())
      .get('/r/stream')
      .then((r) => r);
    await acquired;
    // Nest subscribes once the handler's promise and the interceptors are through: a value sent
    // to the Subject before that reaches nobody, and an Observable that completes empty is a 500.
    await subscribed;
    expect(await other.tryAcquire('route:stream')).toBeNull();
    stream.next('first');
    await server.admin.ping();
    expect(events.count({ type: 'released', key: 'route:stream' })).toBe(0);
    const released = events.next({ type: 'released', key: 'route:stream' });
    stream.next('last');
    stream.complete();
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.text).toBe('last');
    await released;
    expect(await server.admin.exists(`${prefix}{route:stream}`)).toBe(0);
  });

  it('answers 409 when the lock is lost before the handler finished', async () => {
    const res = await request(app.getHttpServer()).get('/r/lost');
    expect(res.status).toBe(409);
  });

  it('answers 500 without leaking the message on a bad key', async () => {
    const res = await request(app.getHttpServer()).get('/r/bad/7');
    expect(res.status).toBe(500);
    expect(res.text).not.toMatch(/placeholder|route:/);
  });

  it('takes the lock exactly once for a route that is also a wrapped method', async () => {
    const before = events.count({ type: 'acquired', key: 'route:once:a' });
    const res = await request(app.getHttpServer()).get('/r/once/a');
    expect(res.status).toBe(200);
    expect(res.body.token).toBeGreaterThan(0);
    expect(events.count({ type: 'acquired', key: 'route:once:a' })).toBe(before + 1);
  });

  it('answers 503 when Redis is unreachable', async () => {
    const deadPort = await freePort();
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: `redis://127.0.0.1:${deadPort}`, commandTimeoutMs: 300 })],
      controllers: [RouteController],
    }).compile();
    const down = moduleRef.createNestApplication({ logger: false });
    await down.init();
    try {
      const res = await request(down.getHttpServer()).get('/r/strict');
      expect(res.status).toBe(503);
      // Worth trying again later, and HTTP lets a 503 say when: the route's hint, as for a 409.
      expect(res.headers['retry-after']).toBe('1');
    } finally {
      await down.close();
    }
  });
});

describe('a @Locked service method called from a controller, when the app shuts down', () => {
  @Injectable()
  class Orders {
    @Locked('order:{0}')
    async place(id: string): Promise<{ id: string }> {
      return { id };
    }
  }

  @Controller('orders')
  class OrdersController {
    constructor(private readonly orders: Orders) {}

    @Post(':id')
    async place(@Param('id') id: string): Promise<{ placed: string }> {
      const order = await this.orders.place(id);
      return { placed: order.id };
    }
  }

  it('answers 503, as a decorated route does: the method did not run, and nothing pretends it did', async () => {
    const keyPrefix = uniquePrefix('http-shutdown');
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix, onEvent: events.listener })],
      controllers: [OrdersController],
      providers: [Orders],
    }).compile();
    const shop = moduleRef.createNestApplication({ logger: false });
    await shop.init();
    const holder = new LockEngine({ redis: server.redis.url, keyPrefix });
    const held = await holder.acquire('order:7');
    try {
      const waiting = events.next({ type: 'waiting', key: 'order:7' });
      const pending = request(shop.getHttpServer()).post('/orders/7');
      const answered = pending.then((r) => r);
      await waiting;
      // Shutdown cancels the request's wait for the lock: the method never runs.
      const closing = shop.close();
      const res = await answered;
      await closing;
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body.placed).toBeUndefined();
    } finally {
      await held.release();
      await holder.close();
    }
  });
});
