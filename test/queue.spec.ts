// Locks in a queue consumer: a @nestjs/bullmq processor's process(job, token) with @Locked, on
// a real Redis. A job that finds its lock busy is put back in the queue, delayed by the retry
// hint, without failing or spending an attempt: the consumer's answer to a busy lock, as a
// route's is 409 with Retry-After.
import { BullModule, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Queue, QueueEvents } from 'bullmq';
import type { Job } from 'bullmq';
import { Locked, LockModule } from 'lockwarden';
import { startRedis, uniquePrefix } from './harness/redis';
import type { RedisTarget } from './harness/redis';

let redis: RedisTarget;
let app: INestApplicationContext;
let queue: Queue;
let events: QueueEvents;
const QUEUE = `lock-jobs-${process.pid}`;
const calls: string[] = [];
const runs: string[] = [];
const failed: string[] = [];
let inside = 0;
let overlaps = 0;
let openFirst!: () => void;
const firstMayEnd = new Promise<void>((resolve) => (openFirst = resolve));

@Processor(QUEUE, { concurrency: 2 })
class Jobs extends WorkerHost {
  @Locked('order:{0.data.order}', { onBusy: 'throw', retryAfterMs: 50 })
  async process(job: Job<{ order: number }>): Promise<string> {
    if (++inside > 1) overlaps++;
    runs.push(job.name);
    if (job.name === 'first') await firstMayEnd;
    inside--;
    return job.name;
  }

  @OnWorkerEvent('active')
  onActive(job: Job): void {
    calls.push(job.name);
  }

  @OnWorkerEvent('failed')
  onFailed(job: Job | undefined): void {
    failed.push(job?.name ?? '?');
  }
}

beforeAll(async () => {
  redis = await startRedis({ own: true });
  const connection = { host: '127.0.0.1', port: Number(new URL(redis.url).port) };
  @Module({
    imports: [
      LockModule.forRoot({ redis: redis.url, keyPrefix: uniquePrefix('queue') }),
      BullModule.forRoot({ connection }),
      BullModule.registerQueue({ name: QUEUE }),
    ],
    providers: [Jobs],
  })
  class AppModule {}
  app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  await app.init();
  queue = new Queue(QUEUE, { connection });
  events = new QueueEvents(QUEUE, { connection });
  await events.waitUntilReady();
});

afterAll(async () => {
  await app?.close();
  await queue?.close();
  await events?.close();
  await redis?.stop();
});

describe('@Locked on a BullMQ processor', () => {
  it('puts a job that finds its lock busy back in the queue, delayed, without failing it, and runs it once the lock is free', async () => {
    const first = await queue.add('first', { order: 7 }, { attempts: 1 });
    while (!runs.includes('first')) await new Promise((r) => setTimeout(r, 5));
    const second = await queue.add('second', { order: 7 }, { attempts: 1 });
    // Busy: the second job goes to the delayed set instead of failing (its one attempt is kept).
    while ((await second.getState()) !== 'delayed') await new Promise((r) => setTimeout(r, 5));
    expect(runs).toEqual(['first']);
    openFirst();
    expect(await first.waitUntilFinished(events)).toBe('first');
    expect(await second.waitUntilFinished(events)).toBe('second');
    expect(runs).toEqual(['first', 'second']);
    expect(calls.filter((c) => c === 'second').length).toBeGreaterThanOrEqual(2); // taken, put off, taken again
    expect(overlaps).toBe(0);
    expect(failed).toEqual([]);
  });
});
