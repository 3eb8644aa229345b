// @ScheduledLock in one process: what it refuses, what it reports, what it leaves in Redis,
// and the same behaviour on the in-memory backend. The cross-process behaviour (late timers,
// skewed clocks, SIGKILL) is in scheduled-ticks.spec.ts.
import { Injectable } from '@nestjs/common';
import type { INestApplicationContext } from '@nestjs/common';
import { Interval, ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { metrics } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { LockConfigError, LockEngine, LockModule, LockService, ScheduledLock } from 'lockwarden';
import type { ScheduledTick } from 'lockwarden';
import { LockTestingModule, MemoryLockBackend } from 'lockwarden/testing';
import { checkScheduledOptions } from '../../libs/lockwarden/src/core/schedule/scheduled-options';
import { everySchedule } from '../../libs/lockwarden/src/core/schedule/tick-schedule';
import { currentTick } from '../../libs/lockwarden/src/core/schedule/tick-context';
import { EventLog } from '../harness/event-log';
import { closersForFile } from '../harness/cleanup';
import { gate } from '../harness/gate';
import { redisForFile, uniquePrefix } from '../harness/redis';

class CollectingReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

class Lines {
  readonly debugs: string[] = [];
  readonly warns: string[] = [];
  log(): void {}
  error(): void {}
  verbose(): void {}
  warn(message: unknown): void {
    this.warns.push(String(message));
  }
  debug(message: unknown): void {
    this.debugs.push(String(message));
  }
}

const server = redisForFile();
const reader = new CollectingReader();
const closers = closersForFile();

beforeAll(() => metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] })));
afterAll(() => metrics.disable());

async function boot(providers: unknown[], keyPrefix: string, extra: Record<string, unknown> = {}) {
  const lines = new Lines();
  const events = new EventLog();
  const moduleRef = await Test.createTestingModule({
    imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix, onEvent: events.listener, ...extra })],
    providers: providers as never[],
  }).compile();
  moduleRef.useLogger(lines);
  const app = await moduleRef.init();
  closers.push(() => app.close());
  return { app, lines, events };
}

describe('@ScheduledLock options', () => {
  it.each([
    [{ onOverrun: 'queue' }, /onOverrun must be 'skip' or 'wait'/],
    [{ onMissed: 'retry' }, /onMissed must be 'skip' or 'run'/],
    [{ keepTicksMs: 10 }, /keepTicksMs must be an integer from 1000/],
    [{ schedule: 'not a cron' }, /cron expression "not a cron" is not valid/],
    [{ schedule: { everyMs: 0 } }, /schedule.everyMs must be a whole number of ms/],
    [{ fair: true }, /Unknown scheduled job option "fair"/],
  ])('refuses %p where the class is defined', (options, message) => {
    expect(() => {
      class Job {
        @ScheduledLock('job', options as never)
        async run(): Promise<void> {}
      }
      return Job;
    }).toThrow(message);
  });

  it('fails the application start, not the first tick, when a method has no schedule to name its ticks by', async () => {
    @Injectable()
    class Unscheduled {
      @ScheduledLock('report')
      async run(): Promise<void> {}
    }
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix: uniquePrefix('unscheduled') })],
      providers: [Unscheduled],
    }).compile();
    moduleRef.useLogger(false);
    await expect(moduleRef.init()).rejects.toThrow(LockConfigError);
    await expect(moduleRef.init()).rejects.toThrow(/Unscheduled.run\(\): cannot tell which tick a call serves/);
    await moduleRef.close();
  });
});

describe('@ScheduledLock in one process', () => {
  it('runs the latest tick of its schedule once, says which, and leaves only the tick record behind', async () => {
    const keyPrefix = uniquePrefix('plain');
    const seen: ScheduledTick[] = [];
    @Injectable()
    class Sweep {
      constructor(private readonly locks: LockService) {}
      @ScheduledLock('sweep', { schedule: { everyMs: 3_600_000 } })
      async run(): Promise<string> {
        seen.push(this.locks.currentTick()!);
        return 'swept';
      }
    }
    const a = await boot([Sweep], keyPrefix, { instanceId: 'a' });
    const b = await boot([Sweep], keyPrefix, { instanceId: 'b' });
    const results = await Promise.all([a.app.get(Sweep).run(), b.app.get(Sweep).run(), a.app.get(Sweep).run()]);
    expect(results.filter((r) => r === 'swept')).toHaveLength(1);
    expect(await b.app.get(Sweep).run()).toBeUndefined(); // later, same hour: the tick is taken
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    expect(seen).toEqual([{ job: 'sweep', at: new Date(hour), catchUp: false, fencingToken: expect.any(Number) }]);
    expect(a.app.get(LockService).currentTick()).toBeUndefined();

    const keys = await server.admin.keys(`${keyPrefix}*`);
    expect(keys.filter((k) => !k.endsWith(':fence'))).toEqual([`${keyPrefix}{sweep}:tick:${hour}`]);
    expect(await server.admin.get(`${keyPrefix}{sweep}:tick:${hour}`)).toMatch(/^done\|[ab]$/);
    // Kept three periods (here three hours), then gone by itself.
    expect(await server.admin.pttl(`${keyPrefix}{sweep}:tick:${hour}`)).toBeGreaterThan(2 * 3_600_000);
  });

  it('reports an overrun through an event, a metric and one DEBUG line, and never runs two at once', async () => {
    const keyPrefix = uniquePrefix('overrun');
    const { app, lines, events } = await boot([], keyPrefix, { instanceId: 'solo' });
    const engine = app.get(LockEngine);
    const job = engine.scheduledJob('report', everySchedule(1_000), checkScheduledOptions({ name: 'report' }, 'test'));
    const inside = gate();
    const first = job.runTick(1_000_000, async () => {
      await inside.reached();
      return 'first';
    });
    await inside.entered;
    await expect(job.runTick(1_001_000, async () => 'second')).resolves.toBeUndefined();
    await expect(job.runTick(1_002_000, async () => 'third')).resolves.toBeUndefined();
    inside.open();
    await expect(first).resolves.toBe('first');
    // Its tick was decided: a late firing of it does not run it either.
    await expect(job.runTick(1_001_000, async () => 'late')).resolves.toBeUndefined();

    expect(events.count({ type: 'overrun', key: 'report' })).toBe(2);
    expect(events.events.find((e) => e.type === 'overrun')!.tick).toEqual(new Date(1_001_000));
    const overruns = lines.debugs.filter((l) => l.includes('skipped as an overrun:'));
    expect(overruns).toEqual(
      [1_001_000, 1_002_000].map(
        (at) =>
          `Tick ${new Date(at).toISOString()} of "report" skipped as an overrun: the run of tick ${new Date(1_000_000).toISOString()} on solo still holds the job (until it ends, or its lease does).`,
      ),
    );
    // One WARN per job says that its ticks are being skipped; each overrun stays at debug level.
    expect(lines.warns.filter((l) => l.includes('are being skipped'))).toHaveLength(1);
    const { resourceMetrics } = await reader.collect();
    const counter = resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === 'lockwarden.tick.overruns');
    expect(counter?.dataPoints.find((p) => p.attributes['lock.name'] === 'report')?.value).toBe(2);
  });

  it("hands off a tick it was waiting to run to the job's holder when it begins to shut down: the holder runs it once, after its own run", async () => {
    const keyPrefix = uniquePrefix('hand-off');
    const a = await boot([], keyPrefix, { instanceId: 'a' });
    const b = await boot([], keyPrefix, { instanceId: 'b' });
    const options = checkScheduledOptions({ onOverrun: 'wait' }, 'test');
    const jobOf = (app: INestApplicationContext) =>
      app.get(LockEngine).scheduledJob('sync', everySchedule(1_000), options);
    // What b's job ran, by tick, as the job itself sees it.
    const ranByB: number[] = [];
    const inside = gate();
    const jobOfB = async (): Promise<string> => {
      ranByB.push(b.app.get(LockService).currentTick()!.at.getTime());
      if (ranByB.length === 1) await inside.reached();
      return 'b';
    };
    const first = jobOf(b.app).runTick(5_000, jobOfB);
    await inside.entered;
    const parked = a.events.next({ type: 'waiting', key: 'sync' });
    const waiting = jobOf(a.app).runTick(6_000, async () => 'by a');
    await parked;
    await server.admin.exists(`${keyPrefix}{sync}:tick:6000`).then((n) => expect(n).toBe(1));
    const stopping = a.app.get(LockEngine).drain(1_000);
    await expect(waiting).resolves.toBeUndefined();
    await stopping;
    // Handed off, not missed: its record is gone (so a late firing could still claim it), and
    // the job's next holder will find it.
    expect(a.events.events.some((e) => e.type === 'missed')).toBe(false);
    expect([...a.lines.warns, ...b.lines.warns].some((l) => l.includes('handed it off'))).toBe(true);
    expect(await server.admin.exists(`${keyPrefix}{sync}:tick:6000`)).toBe(0);
    expect(await server.admin.get(`${keyPrefix}{sync}:handed-off`)).toBe('6000');
    // A shutting-down instance takes no new tick at all, and touches nothing in Redis for it.
    await expect(jobOf(a.app).runTick(7_000, async () => 'by a')).resolves.toBeUndefined();
    expect(await server.admin.exists(`${keyPrefix}{sync}:tick:7000`)).toBe(0);
    inside.open();
    await expect(first).resolves.toBe('b');
    expect(ranByB).toEqual([5_000, 6_000]);
    expect(await server.admin.get(`${keyPrefix}{sync}:tick:6000`)).toBe('done|b');
    expect(await server.admin.exists(`${keyPrefix}{sync}:handed-off`)).toBe(0);
    // Once: a late firing of the tick finds it taken.
    await expect(jobOf(b.app).runTick(6_000, jobOfB)).resolves.toBeUndefined();
    expect(ranByB).toEqual([5_000, 6_000]);
  });

  it('a tick handed off that an instance claimed since (its timer fired late) runs there, not again by the holder', async () => {
    const keyPrefix = uniquePrefix('hand-off-claimed');
    const b = await boot([], keyPrefix, { instanceId: 'b' });
    const job = b.app.get(LockEngine).scheduledJob('sync', everySchedule(1_000), checkScheduledOptions({}, 'test'));
    const ran: number[] = [];
    const fn = async (): Promise<void> => void ran.push(b.app.get(LockService).currentTick()!.at.getTime());
    // As tick-settle.lua leaves a handed-off tick 6000, then a late firing of 6000 runs it.
    await server.admin.set(`${keyPrefix}{sync}:handed-off`, '6000', 'PX', 60_000);
    await job.runTick(6_000, fn);
    await job.runTick(7_000, fn);
    expect(ran).toEqual([6_000, 7_000]);
    expect(await server.admin.exists(`${keyPrefix}{sync}:handed-off`)).toBe(0);
  });

  it.each([
    ['two methods share a job name', 'share the job name "nightly"'],
    ['a method has both @Interval and a schedule option', 'give its schedule once'],
  ])('fails the application start when %s', async (what, message) => {
    @Injectable()
    class Jobs {
      @Interval(60_000)
      @ScheduledLock('nightly', what.startsWith('a method') ? { schedule: { everyMs: 1_000 } } : {})
      async one(): Promise<void> {}

      @ScheduledLock(what.startsWith('two') ? 'nightly' : 'other', { schedule: '0 0 * * * *' })
      async two(): Promise<void> {}
    }
    const moduleRef = await Test.createTestingModule({
      imports: [
        ScheduleModule.forRoot(),
        LockModule.forRoot({ redis: server.redis.url, keyPrefix: uniquePrefix('dup') }),
      ],
      providers: [Jobs],
    }).compile();
    moduleRef.useLogger(false);
    await expect(moduleRef.init()).rejects.toThrow(message);
    await moduleRef.close();
  });

  it('keeps working with lockAtLeastMs on a method without a schedule, as before', async () => {
    const keyPrefix = uniquePrefix('lock-only');
    let runs = 0;
    @Injectable()
    class Legacy {
      @ScheduledLock('legacy', { lockAtLeastMs: 60_000 })
      async run(): Promise<void> {
        runs++;
      }
    }
    const { app } = await boot([Legacy], keyPrefix);
    await app.get(Legacy).run();
    await app.get(Legacy).run();
    expect(runs).toBe(1);
    expect(await server.admin.pttl(`${keyPrefix}{legacy}`)).toBeGreaterThan(1_000);
  });
});

describe('@ScheduledLock on the in-memory backend', () => {
  it('hands a tick off in the in-memory backend too, as on Redis', async () => {
    const backend = new MemoryLockBackend();
    const events = new EventLog();
    const a = new LockEngine({ instanceId: 'a', onEvent: events.listener }, undefined, backend);
    const b = new LockEngine({ instanceId: 'b' }, undefined, backend);
    closers.push(
      () => a.close(),
      () => b.close(),
    );
    const options = checkScheduledOptions({ onOverrun: 'wait' }, 'test');
    const jobOf = (e: LockEngine) => e.scheduledJob('sync', everySchedule(1_000), options);
    const ranByB: number[] = [];
    const inside = gate();
    const jobOfB = async (): Promise<void> => {
      ranByB.push(currentTick()!.at.getTime());
      if (ranByB.length === 1) await inside.reached();
    };
    const first = jobOf(b).runTick(5_000, jobOfB);
    await inside.entered;
    const parked = events.next({ type: 'waiting', key: 'sync' });
    const waiting = jobOf(a).runTick(6_000, async () => undefined);
    await parked;
    await a.drain(1_000);
    await expect(waiting).resolves.toBeUndefined();
    expect(events.events.some((e) => e.type === 'missed')).toBe(false);
    inside.open();
    await first;
    expect(ranByB).toEqual([5_000, 6_000]);
    await expect(jobOf(b).runTick(6_000, jobOfB)).resolves.toBeUndefined();
    expect(ranByB).toEqual([5_000, 6_000]);
  });

  it('dedups a tick between two instances that share the backend', async () => {
    let runs = 0;
    @Injectable()
    class Tick {
      @Interval(3_600_000)
      @ScheduledLock('hourly')
      async run(): Promise<void> {
        runs++;
      }
    }
    const backend = new MemoryLockBackend();
    const apps: INestApplicationContext[] = [];
    for (const instanceId of ['a', 'b']) {
      const moduleRef = await Test.createTestingModule({
        imports: [ScheduleModule.forRoot(), LockTestingModule.forRoot({ backend, instanceId })],
        providers: [Tick],
      }).compile();
      const app = await moduleRef.init();
      closers.push(() => app.close());
      apps.push(app);
    }
    await Promise.all(apps.map((app) => app.get(Tick).run()));
    await apps[1].get(Tick).run();
    expect(runs).toBe(1);
  });
});
