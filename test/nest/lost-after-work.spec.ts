import { Controller, Injectable, Param, Post } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { Interval, ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { LockEngine, LockLostError, LockModule, LockSignal, Locked, ScheduledLock } from 'lockwarden';
import request from 'supertest';
import { aborted, EventLog } from '../harness/event-log';
import { Lines } from '../harness/lines';
import { redisForFile, uniquePrefix } from '../harness/redis';
import { closeNow } from '../harness/engines';

/**
 * Work that ran to its end while its lock was lost: its effects happened, so no caller is told
 * to retry (which would make it pay twice). Redis drops the lock under the running handler (an
 * operator's DEL, as an eviction would), another instance takes it meanwhile, and the handler's
 * write, counted outside the library, still happens.
 */
const server = redisForFile();
const prefix = uniquePrefix('after-work');
const events = new EventLog();
const lines = new Lines();
let app: INestApplication;
let other: LockEngine;
/** Writes the handlers made: the observer outside the library. */
const writes: string[] = [];

/** Drops `key`'s lock in Redis and has the other instance take it, as an eviction then a second request would. */
async function takenAway(key: string): Promise<void> {
  await server.admin.del(`${prefix}{${key}}`);
  await other.acquire(key, { waitMs: 0 });
}

@Controller('orders')
class OrdersController {
  @Post(':id')
  @Locked('order:{0}')
  async update(@Param('id') id: string): Promise<{ id: string }> {
    await takenAway(`order:${id}`);
    writes.push(`order:${id}`);
    return { id };
  }

  @Post(':id/slow')
  @Locked('slow:{0}', { leaseMs: 600 })
  async slow(@Param('id') id: string, @LockSignal() signal: AbortSignal): Promise<string> {
    await server.admin.del(`${prefix}{slow:${id}}`);
    // The watchdog finds it gone at its next renewal; the handler finishes its write anyway.
    await aborted(signal);
    writes.push(`slow:${id}`);
    return 'written';
  }
}

@Injectable()
class Jobs {
  @Locked('job:{0}')
  async run(id: string): Promise<string> {
    await takenAway(`job:${id}`);
    writes.push(`job:${id}`);
    return 'done';
  }

  @Interval(3_600_000)
  @ScheduledLock('nightly')
  async nightly(): Promise<void> {
    await takenAway('nightly');
    writes.push('nightly');
  }
}

beforeAll(async () => {
  const moduleRef = await Test.createTestingModule({
    imports: [
      ScheduleModule.forRoot(),
      LockModule.forRoot({ redis: server.redis.url, keyPrefix: prefix, onEvent: events.listener }),
    ],
    controllers: [OrdersController],
    providers: [Jobs],
  }).compile();
  moduleRef.useLogger(lines);
  app = moduleRef.createNestApplication();
  app.useLogger(lines);
  await app.init();
  other = new LockEngine({ redis: server.redis.url, keyPrefix: prefix });
  server.atEnd(
    () => app.close(),
    () => closeNow(other),
  );
});

describe('locked work that ran to its end after its lock was lost', () => {
  it('a route answers 409 without any retry advice, logs an ERROR with the key, and counts it', async () => {
    const res = await request(app.getHttpServer()).post('/orders/7');
    expect(writes).toContain('order:7');
    expect(res.status).toBe(409);
    expect(res.headers['retry-after']).toBeUndefined();
    expect(res.body.message).toMatch(/The work ran/);
    expect(res.body.message).not.toMatch(/retry/i);
    expect(res.body.code).toBe('LOCK_LOST_AFTER_WORK');
    expect(lines.of('error', /"order:7".*ran to its end after its lock was lost/)).toHaveLength(1);
    expect(events.count({ type: 'unprotected', key: 'order:7' })).toBe(1);
  });

  it('the same when the watchdog found the loss while the handler ran on', async () => {
    const res = await request(app.getHttpServer()).post('/orders/8/slow');
    expect(writes).toContain('slow:8');
    expect(res.status).toBe(409);
    expect(res.headers['retry-after']).toBeUndefined();
    expect(res.body.message).not.toMatch(/retry/i);
    expect(res.body.code).toBe('LOCK_LOST_AFTER_WORK');
    expect(lines.of('error', /"slow:8"/)).toHaveLength(1);
  });

  it('a decorated service method rejects with LockLostError (workCompleted), so its caller can compensate', async () => {
    const err = await app
      .get(Jobs)
      .run('3')
      .catch((e: unknown) => e);
    expect(writes).toContain('job:3');
    expect(err).toBeInstanceOf(LockLostError);
    expect((err as LockLostError).workCompleted).toBe(true);
  });

  it('a scheduled tick logs it once, at ERROR, and does not throw it at the scheduler again', async () => {
    await expect(app.get(Jobs).nightly()).resolves.toBeUndefined();
    expect(writes).toContain('nightly');
    expect(lines.of('error', /"nightly"/)).toHaveLength(1);
  });
});
