import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Controller, Get, Injectable, Module, Param } from '@nestjs/common';
import type { INestApplication, INestApplicationContext, LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { LockEngine, LockInterruptedError, LockModule, LockService, Locked, ScheduledLock } from 'lockwarden';
import type { LockHandle } from 'lockwarden';
import { Observable } from 'rxjs';
import request from 'supertest';
import { workersForFile } from '../harness/child';
import { closersForFile } from '../harness/cleanup';
import { aborted, EventLog } from '../harness/event-log';
import { redisForFile, uniquePrefix } from '../harness/redis';

const server = redisForFile();
const closers = closersForFile();
const worker = workersForFile();

class CapturingLogger implements LoggerService {
  readonly warnings: string[] = [];
  readonly debugs: string[] = [];
  readonly errors: string[] = [];
  readonly logs: string[] = [];
  log(message: unknown): void {
    this.logs.push(String(message));
  }
  error(message: unknown): void {
    this.errors.push(String(message));
  }
  verbose(): void {}
  debug(message: unknown): void {
    this.debugs.push(String(message));
  }
  warn(message: unknown): void {
    this.warnings.push(String(message));
  }
}

describe('locks follow the HTTP request', () => {
  let app: INestApplication;
  let prefix: string;
  const events = new EventLog();
  const logger = new CapturingLogger();
  /** Lets the test decide when a handler that ignores its signal finishes. */
  const gates = new Map<string, () => void>();
  const entries = new Map<string, (signal: AbortSignal) => void>();
  const steps: string[] = [];
  /** The holder's signal, once the handler named `name` is inside its section. */
  function entered(name: string): Promise<AbortSignal> {
    return new Promise<AbortSignal>((resolve) => entries.set(name, resolve));
  }
  /** Called by a handler inside its section: reports its signal, then waits for the test to let it finish. */
  function gate(name: string, signal: AbortSignal): Promise<void> {
    entries.get(name)?.(signal);
    return new Promise<void>((resolve) => gates.set(name, resolve));
  }

  @Injectable()
  class OrderService {
    constructor(readonly locks: LockService) {}

    @Locked('order:{0.id}')
    async process(order: { id: string }): Promise<string> {
      await gate(`service:${order.id}`, this.locks.current()!.signal);
      expect(this.locks.current(`order:${order.id}`)?.key).toBe(`order:${order.id}`);
      return 'processed';
    }
  }

  @Controller('job')
  class JobController {
    constructor(
      private readonly locks: LockService,
      private readonly orders: OrderService,
    ) {}

    @Get('long')
    // A lease the request outlives several times, each renewal given a second of room.
    @Locked('long', { leaseMs: 3_000 })
    async long(): Promise<string> {
      await events.renewals('long', 4); // outlives its lease several times
      return 'done';
    }

    @Get('route/:id')
    @Locked('order:{0}')
    async route(@Param('id') id: string): Promise<string> {
      await gate(`route:${id}`, this.locks.current()!.signal);
      return 'done';
    }

    @Get('observable/:id')
    @Locked('order:{0}')
    async observable(@Param('id') id: string): Promise<Observable<string>> {
      const signal = this.locks.current()!.signal;
      return new Observable<string>((subscriber) => {
        void gate(`observable:${id}`, signal).then(() => {
          subscriber.next('done');
          subscriber.complete();
        });
        // Unsubscribing is the end of an Observable's work: the lock may go only after it.
        return () => steps.push(`teardown ${id}`);
      });
    }

    @Get('service/:id')
    async service(@Param('id') id: string): Promise<string> {
      return this.orders.process({ id });
    }

    @Get('with-lock/:id')
    async withLock(@Param('id') id: string): Promise<string> {
      return this.locks.withLock(`order:${id}`, async (lock) => {
        await gate(`with-lock:${id}`, lock.signal);
        expect(this.locks.current(`order:${id}`)).toBe(lock);
        return 'done';
      });
    }

    @Get('forgetful-permit')
    async forgetfulPermit(): Promise<string> {
      const pool = this.locks.semaphore('forgotten-pool', { limit: 2 });
      await pool.acquire(); // never released by the handler
      await pool.withPermit(() => undefined);
      return 'ok';
    }

    @Get('forgetful')
    async forgetful(): Promise<string> {
      await this.locks.acquire('forgotten'); // never released by the handler
      await this.locks.withLock('tidy', () => undefined);
      return 'ok';
    }
  }

  beforeAll(async () => {
    prefix = uniquePrefix('req');
    const moduleRef = await Test.createTestingModule({
      // A lease with room for renewals on a machine busy with other tests: the long request
      // outlives it several times, and a lease lost meanwhile fails that test with what happened.
      imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix: prefix, onEvent: events.listener })],
      controllers: [JobController],
      providers: [OrderService],
    }).compile();
    app = moduleRef.createNestApplication({ logger });
    await app.listen(0, '127.0.0.1');
  });

  afterAll(async () => {
    for (const open of gates.values()) open();
    await app.close();
  });

  it('keeps the lock of a request that outlives its lease, and releases it right after the response', async () => {
    const released = events.next({ type: 'released', key: 'long' });
    const res = await request(app.getHttpServer()).get('/job/long');
    expect(res.status).toBe(200);
    expect(events.count({ type: 'lost', key: 'long' })).toBe(0);
    await released;
    expect(await server.admin.exists(`${prefix}{long}`)).toBe(0);
  });

  describe.each(['route', 'service', 'with-lock'])('when the client goes away (%s)', (path) => {
    it('aborts the signal at once, keeps the lock while the work runs, and frees it right after', async () => {
      const id = `gone-${path}`;
      const key = `order:${id}`;
      const inside = entered(`${path}:${id}`);
      const { port } = app.getHttpServer().address() as AddressInfo;
      const req = httpRequest({ host: '127.0.0.1', port, path: `/job/${path}/${id}` });
      req.on('error', () => undefined);
      req.end();
      const signal = await inside;
      req.destroy();
      const reason = await aborted(signal);
      expect(reason).toBeInstanceOf(LockInterruptedError);
      expect((reason as Error).message).toMatch(/client went away/);

      // A second request for the same order waits: the first one's work still runs.
      const parked = events.next({ type: 'waiting', key });
      const second = request(app.getHttpServer())
        .get(`/job/${path}/${id}`)
        .then((r) => r.status);
      await parked;
      expect(await server.admin.exists(`${prefix}{${key}}`)).toBe(1);
      expect(events.count({ type: 'released', key })).toBe(0);

      const released = events.next({ type: 'released', key });
      const secondInside = entered(`${path}:${id}`);
      gates.get(`${path}:${id}`)!();
      await released;
      await secondInside; // only now does the second request enter
      gates.get(`${path}:${id}`)!();
      expect(await second).toBe(200);
      expect(logger.warnings.filter((w) => w.includes(key))).toEqual([]);
    });
  });

  it("keeps an Observable route's lock until Nest unsubscribes it on disconnect, and frees it right after", async () => {
    const id = 'gone-observable';
    const key = `order:${id}`;
    const inside = entered(`observable:${id}`);
    const released = events.next({ type: 'released', key });
    void released.then(() => steps.push('released'));
    const { port } = app.getHttpServer().address() as AddressInfo;
    const req = httpRequest({ host: '127.0.0.1', port, path: `/job/observable/${id}` });
    req.on('error', () => undefined);
    req.end();
    const signal = await inside;
    expect(await server.admin.exists(`${prefix}{${key}}`)).toBe(1);
    req.destroy();
    expect(await aborted(signal)).toBeInstanceOf(LockInterruptedError);
    await released;
    expect(steps.filter((s) => s.includes(id) || s === 'released')).toEqual([`teardown ${id}`, 'released']);
    expect(await server.admin.exists(`${prefix}{${key}}`)).toBe(0);
  });

  it('answers 409 at once with onBusy: throw while an abandoned request still works', async () => {
    const id = 'gone-409';
    const key = `order:${id}`;
    const inside = entered(`route:${id}`);
    const { port } = app.getHttpServer().address() as AddressInfo;
    const req = httpRequest({ host: '127.0.0.1', port, path: `/job/route/${id}` });
    req.on('error', () => undefined);
    req.end();
    const signal = await inside;
    req.destroy();
    await aborted(signal);
    await expect(app.get(LockService).tryAcquire(key)).resolves.toBeNull();
    const released = events.next({ type: 'released', key });
    gates.get(`route:${id}`)!();
    await released;
    const lock = await app.get(LockService).tryAcquire(key);
    expect(lock).not.toBeNull();
    await lock!.release();
  });

  it('releases a lock the handler forgot, with one warning naming only it', async () => {
    const released = events.next({ type: 'released', key: 'forgotten' });
    const res = await request(app.getHttpServer()).get('/job/forgetful');
    expect(res.status).toBe(200);
    await released;
    expect(await server.admin.exists(`${prefix}{forgotten}`)).toBe(0);
    const warnings = logger.warnings.filter((w) => w.includes('never released'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/GET \/job\/forgetful ended still holding 1 lock\(s\).*"forgotten"/);
    expect(warnings[0]).not.toContain('tidy');
  });

  it('releases a permit the handler forgot, like a lock, and not the one withPermit gave back', async () => {
    const released = events.next({ type: 'released', key: 'forgotten-pool' }, 2); // withPermit's, then the forgotten one
    const res = await request(app.getHttpServer()).get('/job/forgetful-permit');
    expect(res.status).toBe(200);
    await released;
    expect(await app.get(LockService).semaphore('forgotten-pool', { limit: 2 }).inspect()).toMatchObject({
      used: 0,
      holders: [],
    });
    const warnings = logger.warnings.filter((w) => w.includes('never released') && w.includes('forgetful-permit'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/ended still holding 1 lock\(s\).*"forgotten-pool"/);
  });

  it('leaves locks taken outside any request alone', async () => {
    const lock = await app.get(LockService).acquire('outside');
    await request(app.getHttpServer()).get('/job/forgetful');
    expect(lock.isHeld()).toBe(true);
    await lock.release();
  });
});

describe('scheduled-job dedup', () => {
  @Injectable()
  class Draw {
    runs = 0;

    @Cron('0 0 12 * * *', { name: 'draw-at-least' })
    @ScheduledLock('draw-at-least', { lockAtLeastMs: 60_000 })
    async withAtLeast(): Promise<void> {
      this.runs++;
    }

    plainRuns = 0;

    @Cron('0 0 12 * * *', { name: 'draw-plain' })
    @Locked('draw-plain', { onBusy: 'skip' })
    async plain(): Promise<void> {
      this.plainRuns++;
    }
  }

  async function instances(prefix: string): Promise<INestApplicationContext[]> {
    const apps: INestApplicationContext[] = [];
    for (const name of ['a', 'b', 'c']) {
      const moduleRef = await Test.createTestingModule({
        imports: [
          ScheduleModule.forRoot(),
          LockModule.forRoot({ redis: server.redis.url, keyPrefix: prefix, instanceId: name }),
        ],
        providers: [Draw],
      }).compile();
      const app = await moduleRef.init();
      closers.push(() => app.close());
      apps.push(app);
    }
    return apps;
  }

  it('runs a tick once across three instances whose timers fire one after another (the tick decides, not the lock)', async () => {
    const apps = await instances(uniquePrefix('cron'));
    // Worst-case skew: each instance fires only after the previous run has finished.
    for (const app of apps) await app.get(Draw).withAtLeast();
    expect(apps.reduce((n, app) => n + app.get(Draw).runs, 0)).toBe(1);
  });

  it('a plain @Locked skip, by contrast, runs the same staggered tick once per instance', async () => {
    const apps = await instances(uniquePrefix('cron-plain'));
    for (const app of apps) await app.get(Draw).plain();
    expect(apps.reduce((n, app) => n + app.get(Draw).plainRuns, 0)).toBe(3);
  });

  it('runs once when all instances fire at the same moment', async () => {
    // A fast job can finish before a trigger fired at the same moment elsewhere reaches
    // Redis: the tick's record, not the lock, keeps that one from running it again.
    const apps = await instances(uniquePrefix('cron-same'));
    await Promise.all(apps.map((app) => app.get(Draw).withAtLeast()));
    expect(apps.reduce((n, app) => n + app.get(Draw).runs, 0)).toBe(1);
  });

  it('dedups across three processes fired at staggered times', async () => {
    const PREFIX = uniquePrefix('cron-proc');
    const workers = ['p1', 'p2', 'p3'].map((NAME) => worker('cron-worker', { REDIS: server.redis.url, PREFIX, NAME }));
    await Promise.all(workers.map((w) => w.waitFor(/^ready$/)));
    for (const [i, w] of workers.entries()) {
      await server.admin.rpush(`${PREFIX}fire:p${i + 1}`, 'tick');
      await w.waitFor(/^(ran|skipped)$/);
    }
    const outcomes = workers.map((w) => w.lines.find((l) => l === 'ran' || l === 'skipped'));
    expect(outcomes.filter((o) => o === 'ran')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'skipped')).toHaveLength(2);
    for (const [i, w] of workers.entries()) {
      await server.admin.rpush(`${PREFIX}fire:p${i + 1}`, 'stop');
      await w.succeeded();
    }
  });
});

describe('skips', () => {
  it('are logged at debug level with the key and the holder instance, never its token', async () => {
    const keyPrefix = uniquePrefix('skiplog');
    const logger = new CapturingLogger();
    @Injectable()
    class Report {
      @ScheduledLock('report', { schedule: { everyMs: 60_000 } })
      async run(): Promise<string> {
        return 'ran';
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix, instanceId: 'worker-7' })],
      providers: [Report],
    }).compile();
    moduleRef.useLogger(logger);
    const app = await moduleRef.init();
    closers.push(() => app.close());
    const other = new LockEngine({ redis: server.redis.url, keyPrefix, instanceId: 'reporter-host:42' });
    closers.push(() => other.close());
    const held = await other.acquire('report');
    await expect(app.get(Report).run()).resolves.toBeUndefined();
    const line = logger.debugs.find((m) => m.includes('"report" is held by'));
    expect(line).toMatch(
      /^Tick .* of "report" skipped: "report" is held by reporter-host:42, but by no run of the job/,
    );
    expect(line).not.toContain((held as unknown as { lease: { ownerToken: string } }).lease.ownerToken);
    await held.release();
  });
});

describe('graceful shutdown', () => {
  it('answers 503, logging no error, for a route whose work stops as its signal asks and throws the reason', async () => {
    const logger = new CapturingLogger();
    let inside!: () => void;
    const started = new Promise<void>((resolve) => (inside = resolve));
    @Controller('stops')
    class StopsController {
      constructor(private readonly locks: LockService) {}

      @Get()
      @Locked('stops')
      async stops(): Promise<string> {
        const signal = this.locks.current()!.signal;
        inside();
        // What the docs advise: pass the signal on, and stop with its reason when it fires.
        throw await aborted(signal);
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix: uniquePrefix('stops') })],
      controllers: [StopsController],
    }).compile();
    const app = moduleRef.createNestApplication({ logger });
    await app.listen(0, '127.0.0.1');
    const reply = request(app.getHttpServer()).get('/stops');
    const answered = reply.then((r) => r);
    await started;
    const closed = app.close();
    const res = await answered;
    await closed;
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('LOCK_UNAVAILABLE');
    expect(res.headers['retry-after']).toBeDefined();
    expect(logger.errors).toEqual([]);
    expect(logger.logs.some((l) => /asked to stop: the application is shutting down/.test(l))).toBe(true);
  });

  it('asks in-flight work to stop, waits for it, releases what it gives back, and keeps lockAtLeastMs locks', async () => {
    const keyPrefix = uniquePrefix('shutdown');
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix, shutdownGraceMs: 30_000 })],
    }).compile();
    const app = await moduleRef.init();
    const locks = app.get(LockService);
    const steps: string[] = [];
    let seen: unknown;
    const work = locks.withLock('work', async (lock) => {
      seen = await aborted(lock.signal);
      await server.admin.ping(); // finishing up still happens under the lock
      steps.push('work finished');
      return 'saved';
    });
    const kept = await locks.acquire('kept', { lockAtLeastMs: 60_000 });
    await kept.release();
    const bare = await locks.acquire('bare');
    void aborted(bare.signal).then(() => bare.release());
    await app.close();
    steps.push('closed');

    expect(steps).toEqual(['work finished', 'closed']);
    await expect(work).resolves.toBe('saved');
    expect(seen).toBeInstanceOf(LockInterruptedError);
    expect((seen as Error).message).toMatch(/shutting down/);
    expect(await server.admin.exists(`${keyPrefix}{work}`, `${keyPrefix}{bare}`)).toBe(0);
    expect(await server.admin.pttl(`${keyPrefix}{kept}`)).toBeGreaterThan(1_000);
  });

  it('lets a job that cannot run because the app is stopping resolve without running, and logs no error', async () => {
    const keyPrefix = uniquePrefix('shutdown-jobs');
    const logger = new CapturingLogger();
    const events = new EventLog();
    @Injectable()
    class Jobs {
      runs = 0;

      @Locked('nightly', { onBusy: 'skip' })
      async skip(): Promise<string> {
        this.runs++;
        return 'ran';
      }

      @Locked('busy', { waitMs: 30_000 })
      async wait(): Promise<string> {
        this.runs++;
        return 'ran';
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix, onEvent: events.listener })],
      providers: [Jobs],
    }).compile();
    moduleRef.useLogger(logger);
    const app = await moduleRef.init();
    const jobs = app.get(Jobs);
    const other = new LockEngine({ redis: server.redis.url, keyPrefix });
    closers.push(() => other.close());
    const held = await other.acquire('busy');
    const parked = events.next({ type: 'waiting', key: 'busy' });
    const waiting = jobs.wait();
    await parked;

    const closing = app.close();
    await expect(waiting).resolves.toBeUndefined(); // its wait was cut short by the shutdown
    await expect(jobs.skip()).resolves.toBeUndefined(); // a tick that fires while the app stops
    await closing;
    expect(jobs.runs).toBe(0);
    expect(logger.errors).toEqual([]);
    expect(logger.debugs.filter((d) => d.includes('did not run: the application is shutting down'))).toHaveLength(2);
    await held.release();
  });

  it('never releases a lock whose work outlives the grace: it expires with its lease, and one warning names it', async () => {
    const keyPrefix = uniquePrefix('shutdown-stuck');
    const logger = new CapturingLogger();
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix, shutdownGraceMs: 200, leaseMs: 5_000 })],
    }).compile();
    moduleRef.useLogger(logger);
    const app = await moduleRef.init();
    const locks = app.get(LockService);
    let finish!: () => void;
    const entered = new Promise<LockHandle>((resolve) => {
      void locks
        .withLock('stubborn', async (lock) => {
          resolve(lock);
          await new Promise<void>((r) => (finish = r)); // ignores its signal
          return 'late';
        })
        .catch((e: unknown) => e);
    });
    const lock = await entered;
    const other = new LockEngine({ redis: server.redis.url, keyPrefix });
    closers.push(() => other.close());
    await app.close();

    expect(lock.signal.aborted).toBe(true);
    expect(lock.isHeld()).toBe(false);
    expect(locks.current()).toBeUndefined();
    // Still in Redis, under the old lease: nobody else can enter while the stubborn work runs.
    expect(await server.admin.pttl(`${keyPrefix}{stubborn}`)).toBeGreaterThan(0);
    await expect(other.tryAcquire('stubborn')).resolves.toBeNull();
    const warning = logger.warnings.find((w) => w.includes('still held by running work'));
    expect(warning).toMatch(/"stubborn"/);
    finish();
  });
});

void Module;
