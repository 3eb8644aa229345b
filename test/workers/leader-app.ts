// One instance of the leadership suite: a Nest app whose @Interval job is @LeaderOnly.
// Each run reports its entry and exit to the observer Redis (OBSERVER), which the library
// never sees, with the term's fencing token; a run whose leadership is lost under it says so.
// Prints "ready", "gained <token>", "ran <token>" (first run of each term) and "lost <token>".
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Interval, ScheduleModule } from '@nestjs/schedule';
import { LeaderOnly, LockLostError, LockModule, LockService, OnLeadership } from '../../libs/lockwarden/src';
import type { LeaderTerm } from '../../libs/lockwarden/src';
import { Observer } from '../invariant/observer';
import { workerMain } from './worker-main';

const { REDIS, OBSERVER, PREFIX, NAME = 'x', LEASE_MS = '3000', INTERVAL_MS = '25', WORK_MS = '15' } = process.env;
const observer = new Observer(OBSERVER!);
let sections = 0;
let busy = false;
const announced = new Set<number>();

@Injectable()
class Reporter {
  constructor(private readonly locks: LockService) {}

  @Interval(Number(INTERVAL_MS))
  @LeaderOnly('jobs')
  async tick(): Promise<void> {
    // One run at a time per process: the observer counts two of ours at once as a conflict too.
    if (busy) return;
    busy = true;
    try {
      const leadership = this.locks.leadership('jobs');
      const signal = leadership.signal;
      const token = leadership.currentTerm!.fencingToken;
      const id = `${NAME}:${++sections}#${token}`;
      const lost = (): void => {
        if (signal.reason instanceof LockLostError) void observer.lost(id).catch(() => undefined);
      };
      signal.addEventListener('abort', lost, { once: true });
      await observer.enter('leader:jobs', id, 'w', token);
      await new Promise((resolve) => setTimeout(resolve, Number(WORK_MS)));
      void signal.aborted; // its last look, as a protected write's
      await observer.exit('leader:jobs', id, Date.now());
      signal.removeEventListener('abort', lost);
      if (!announced.has(token)) {
        announced.add(token);
        console.log(`ran ${token}`);
      }
    } finally {
      busy = false;
    }
  }

  @OnLeadership('jobs', 'gained')
  gained(term: LeaderTerm): void {
    console.log(`gained ${term.fencingToken}`);
  }

  @OnLeadership('jobs', 'lost')
  lost(term: LeaderTerm): void {
    console.log(`lost ${term.fencingToken}`);
  }
}

@Module({
  imports: [
    ScheduleModule.forRoot(),
    LockModule.forRoot({ redis: REDIS!, keyPrefix: PREFIX, instanceId: NAME, leaseMs: Number(LEASE_MS) }),
  ],
  providers: [Reporter],
})
class AppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  console.log('ready');
}

workerMain(main);
