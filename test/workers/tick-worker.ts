// One instance of an app with a scheduled job, for the tick tests. Each run of the job is
// recorded at an observer Redis the library never touches: a count of runs inside at once
// (and its peak), and one entry per run with its tick, instance, fencing token and the
// observer's own clock at the start. The instance prints its lock events and each firing.
//
// Env: REDIS, OBSERVER, PREFIX, NAME; CRON (default every second); JOB_MS (how long a run
// takes); ON_OVERRUN, ON_MISSED; LEASE_MS; HANG=first (the first run never ends, until the
// process is killed); FIRST_RUN_UNTIL_PUSH=key (the first run ends when the test pushes to that
// observer list, instead of after JOB_MS); BLOCK_MS (block the event loop that long around each second, so
// timers fire late); CLOCK_SKEW_MS (see skew-clock.ts).
import './skew-clock';
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockModule, LockService, ScheduledLock } from '../../libs/lockwarden/src';
import type { LockEvent, OnMissed, OnOverrun } from '../../libs/lockwarden/src';
import { workerMain } from './worker-main';

const env = process.env;
const NAME = env.NAME ?? 'x';
const CRON = env.CRON ?? '* * * * * *';
const JOB_MS = Number(env.JOB_MS ?? 100);
const observer = new Redis(env.OBSERVER!);
let hang = env.HANG === 'first';
let gate = env.FIRST_RUN_UNTIL_PUSH;

const ENTER = `local n = redis.call('incr', KEYS[1])
if n > tonumber(redis.call('get', KEYS[2]) or '0') then redis.call('set', KEYS[2], n) end
local t = redis.call('time')
return t[1] * 1000 + math.floor(t[2] / 1000)`;

@Injectable()
class Job {
  constructor(private readonly locks: LockService) {}

  @Cron(CRON)
  @ScheduledLock('job', {
    onOverrun: (env.ON_OVERRUN ?? 'skip') as OnOverrun,
    onMissed: (env.ON_MISSED ?? 'skip') as OnMissed,
  })
  async run(): Promise<void> {
    const tick = this.locks.currentTick()!;
    const at = tick.at.getTime();
    const startedAt = (await observer.eval(ENTER, 2, 'inside', 'peak')) as number;
    await observer.rpush(
      'runs',
      JSON.stringify({ at, instance: NAME, token: tick.fencingToken, startedAt, catchUp: tick.catchUp }),
    );
    console.log(`started ${at}`);
    try {
      if (hang) {
        hang = false;
        await new Promise(() => undefined);
      }
      if (gate) {
        const key = gate;
        gate = undefined;
        // A connection of its own: BLPOP blocks the one it is sent on.
        const blocking = observer.duplicate();
        try {
          await blocking.blpop(key, 0);
        } finally {
          blocking.disconnect();
        }
      } else {
        await sleep(JOB_MS);
      }
    } finally {
      const [sec, usec] = await observer.time();
      await observer.decr('inside');
      await observer.rpush(
        'ended',
        JSON.stringify({ at, endedAt: Number(sec) * 1000 + Math.floor(Number(usec) / 1000) }),
      );
    }
  }

  // SLOW_MS: a second job, whose run outlasts many ticks of the first and ignores its signal,
  // as work that cannot stop at once does while its instance shuts down.
  @Cron(CRON)
  @ScheduledLock('slow')
  async slow(): Promise<void> {
    if (!env.SLOW_MS) return;
    console.log('slow started');
    await sleep(Number(env.SLOW_MS));
  }

  // Unlocked: when this instance's timer fired, and how late by the machine's clock.
  @Cron(CRON)
  fired(): void {
    const now = Date.now();
    console.log(`fired ${Math.floor(now / 1000) * 1000} late ${now % 1000}`);
  }
}

function onEvent(event: LockEvent): void {
  if (event.type === 'overrun' || event.type === 'missed' || (event.type === 'skipped' && event.tick)) {
    console.log(`event ${event.type} ${event.tick!.getTime()}`);
  }
  if (event.type === 'waiting') console.log(`event waiting ${event.key}`);
}

@Module({
  imports: [
    ScheduleModule.forRoot(),
    LockModule.forRoot({
      redis: env.REDIS!,
      keyPrefix: env.PREFIX,
      instanceId: NAME,
      leaseMs: Number(env.LEASE_MS ?? 30_000),
      shutdownGraceMs: 30_000,
      onEvent,
    }),
  ],
  providers: [Job],
})
class AppModule {}

/** Blocks the event loop BLOCK_MS from just before each second, so this instance's timers fire late. */
function blockAroundEachSecond(ms: number): void {
  const arm = (): void => {
    let toNext = 1000 - (Date.now() % 1000) - 100;
    if (toNext < 0) toNext += 1000;
    setTimeout(() => {
      const until = Date.now() + ms;
      while (Date.now() < until) {
        // busy: the event loop is blocked
      }
      arm();
    }, toNext).unref();
  };
  arm();
}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['warn', 'error'] });
  app.enableShutdownHooks();
  if (env.BLOCK_MS) blockAroundEachSecond(Number(env.BLOCK_MS));
  console.log('ready');
}

workerMain(main);
