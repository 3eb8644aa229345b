// Locks in a queue consumer: a @nestjs/bullmq processor's process(job, token) with @Locked, on
// a real Redis. A queue job that finds its lock busy is put back in the queue, delayed by the
// retry hint, without failing or spending an attempt: the consumer's answer to a busy lock, as
// a route's is 409 with Retry-After.
import { BullModule, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Queue, QueueEvents } from 'bullmq';
import type { Job } from 'bullmq';
import { LockEngine, Locked, LockModule } from 'lockwarden';
import { redisForFile, uniquePrefix } from '../harness/redis';

const server = redisForFile({ own: true });
let app: INestApplicationContext;
let queue: Queue;
let events: QueueEvents;
let connection: { host: string; port: number };
const lockPrefix = uniquePrefix('queue');
const QUEUE = `lock-queue-${process.pid}`;
const calls: string[] = [];
const runs: string[] = [];
const failed: string[] = [];
let inside = 0;
let overlaps = 0;
let openFirst!: () => void;
const firstMayEnd = new Promise<void>((resolve) => (openFirst = resolve));

@Processor(QUEUE, { concurrency: 2 })
class OrderConsumer extends WorkerHost {
  @Locked('order:{0.data.order}', { onBusy: 'throw', retryAfterMs: 50 })
  async process(queueJob: Job<{ order: number }>): Promise<string> {
    if (++inside > 1) overlaps++;
    runs.push(queueJob.name);
    if (queueJob.name === 'first') await firstMayEnd;
    inside--;
    return queueJob.name;
  }

  @OnWorkerEvent('active')
  onActive(queueJob: Job): void {
    calls.push(queueJob.name);
  }

  @OnWorkerEvent('failed')
  onFailed(queueJob: Job | undefined): void {
    failed.push(queueJob?.name ?? '?');
  }
}

const WAITING_QUEUE = `lock-queue-waiting-${process.pid}`;

@Processor(WAITING_QUEUE)
class WaitingConsumer extends WorkerHost {
  @Locked('order:{0.data.order}', { waitMs: 60_000, retryAfterMs: 50 })
  async process(queueJob: Job<{ order: number }>): Promise<string> {
    runs.push(queueJob.name);
    return queueJob.name;
  }

  @OnWorkerEvent('active')
  onActive(queueJob: Job): void {
    calls.push(queueJob.name);
  }
}

beforeAll(async () => {
  connection = { host: '127.0.0.1', port: Number(new URL(server.redis.url).port) };
  @Module({
    imports: [
      LockModule.forRoot({ redis: server.redis.url, keyPrefix: lockPrefix }),
      BullModule.forRoot({ connection }),
      BullModule.registerQueue({ name: QUEUE }, { name: WAITING_QUEUE }),
    ],
    providers: [OrderConsumer, WaitingConsumer],
  })
  class AppModule {}
  app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  app.enableShutdownHooks();
  await app.init();
  queue = new Queue(QUEUE, { connection });
  events = new QueueEvents(QUEUE, { connection });
  await events.waitUntilReady();
  server.atEnd(
    () => events.close(),
    () => queue.close(),
    // A test closes it early, and says so by unsetting it.
    () => app?.close(),
  );
});

describe('@Locked on a BullMQ processor', () => {
  it('puts a queue job that finds its lock busy back in the queue, delayed, without failing it, and runs it once the lock is free', async () => {
    const first = await queue.add('first', { order: 7 }, { attempts: 1 });
    while (!runs.includes('first')) await new Promise((r) => setTimeout(r, 5));
    const second = await queue.add('second', { order: 7 }, { attempts: 1 });
    // Busy: the second queue job goes to the delayed set instead of failing (its one attempt is kept).
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

  it('puts a queue job back in the queue when the app shuts down while it waits for its lock, instead of completing it unrun', async () => {
    // Another instance holds the order's lock for longer than this test lasts.
    const other = new LockEngine({ redis: server.redis.url, keyPrefix: lockPrefix });
    const held = await other.acquire('order:9', { leaseMs: 60_000 });
    const waiting = new Queue(WAITING_QUEUE, { connection });
    try {
      const queueJob = await waiting.add('waiting', { order: 9 }, { attempts: 1 });
      while (!calls.includes('waiting')) await new Promise((r) => setTimeout(r, 5));
      await app.close();
      app = undefined as unknown as INestApplicationContext;
      expect(runs).not.toContain('waiting');
      expect(await queueJob.getState()).toBe('delayed');
    } finally {
      await held.release();
      await other.close();
      await waiting.close();
    }
  });
});
