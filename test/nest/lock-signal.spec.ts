import { Body, Controller, Injectable, Param, Post } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { Interval, ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { LockLostError, LockModule, LockService, LockSignal, Locked, ScheduledLock, Semaphore } from 'lockwarden';
import request from 'supertest';
import { aborted } from '../harness/event-log';
import { redisForFile, uniquePrefix } from '../harness/redis';

/** `@LockSignal()`: the signal of the lock a decorated method runs under, one parameter away. */
const server = redisForFile();
const prefix = uniquePrefix('lock-signal');
let app: INestApplication;

/** What each method saw: whether its parameter was the signal of the lock the method holds. */
const seen: Record<string, { own: boolean; aborted: boolean; args?: unknown[] }> = {};

@Controller('signal')
class SignalController {
  constructor(private readonly locks: LockService) {}

  @Post(':id')
  @Locked('route:{0}')
  async route(
    @Param('id') id: string,
    @LockSignal() signal: AbortSignal,
    @Body() body: { note: string },
  ): Promise<{ id: string; note: string }> {
    seen.route = { own: signal === this.locks.current(`route:${id}`)?.signal, aborted: signal.aborted };
    return { id, note: body.note };
  }

  @Post(':id/only')
  @Semaphore('pool', { limit: 2 })
  async only(@LockSignal() signal: AbortSignal): Promise<string> {
    seen.only = { own: signal === this.locks.current('pool')?.signal, aborted: signal.aborted };
    return 'ok';
  }
}

@Injectable()
class Work {
  constructor(private readonly locks: LockService) {}

  @Locked('work:{0}')
  async one(id: string, @LockSignal() signal?: AbortSignal): Promise<boolean> {
    seen.one = { own: signal === this.locks.current(`work:${id}`)?.signal, aborted: signal?.aborted ?? true };
    return true;
  }

  /** Two keys: the signal aborts when either lock is lost. */
  @Locked(['pair:a:{0}', 'pair:b:{0}'], { leaseMs: 600 })
  async two(id: string, @LockSignal() signal?: AbortSignal): Promise<unknown> {
    if (!signal) throw new Error('no signal given');
    seen.two = {
      own:
        signal === this.locks.current(`pair:a:${id}`)?.signal || signal === this.locks.current(`pair:b:${id}`)?.signal,
      aborted: signal.aborted,
    };
    await server.admin.del(`${prefix}{pair:b:${id}}`);
    return aborted(signal);
  }

  @Interval(3_600_000)
  @ScheduledLock('cron')
  async cron(@LockSignal() signal?: AbortSignal): Promise<void> {
    seen.cron = {
      own: signal !== undefined && signal === this.locks.current('cron')?.signal,
      aborted: !!signal?.aborted,
    };
  }
}

beforeAll(async () => {
  const moduleRef = await Test.createTestingModule({
    imports: [ScheduleModule.forRoot(), LockModule.forRoot({ redis: server.redis.url, keyPrefix: prefix })],
    controllers: [SignalController],
    providers: [Work],
  }).compile();
  app = moduleRef.createNestApplication();
  await app.init();
  server.atEnd(() => app.close());
});

describe('@LockSignal()', () => {
  it('gives a route the signal of its lock, beside the parameters Nest fills', async () => {
    const res = await request(app.getHttpServer()).post('/signal/7').send({ note: 'hi' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: '7', note: 'hi' });
    expect(seen.route).toEqual({ own: true, aborted: false });
  });

  it('gives it to a route whose only parameter it is', async () => {
    const res = await request(app.getHttpServer()).post('/signal/8/only');
    expect(res.status).toBe(201);
    expect(seen.only).toEqual({ own: true, aborted: false });
  });

  it('gives a service method its lock signal, whatever its caller passed there', async () => {
    await app.get(Work).one('1', new AbortController().signal);
    expect(seen.one).toEqual({ own: true, aborted: false });
  });

  it('with several keys, gives one signal that aborts when any of the locks is lost', async () => {
    const reason = await app
      .get(Work)
      .two('1')
      .catch((err: unknown) => err);
    expect(seen.two).toEqual({ own: false, aborted: false });
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).key).toBe('pair:b:1');
  });

  it('gives a scheduled tick the signal of the job lock', async () => {
    await app.get(Work).cron();
    expect(seen.cron).toEqual({ own: true, aborted: false });
  });

  it('fails the application start on a method without a lock decorator', async () => {
    @Injectable()
    class Forgot {
      async run(@LockSignal() signal?: AbortSignal): Promise<boolean> {
        return signal === undefined;
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix: uniquePrefix('forgot') })],
      providers: [Forgot],
    }).compile();
    moduleRef.useLogger(false);
    await expect(moduleRef.init()).rejects.toThrow(
      /@LockSignal\(\) on Forgot.run\(\): the method has no lock decorator/,
    );
    await moduleRef.close();
  });
});
