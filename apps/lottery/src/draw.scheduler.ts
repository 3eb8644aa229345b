import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { ScheduledLock } from 'lockwarden';
import { DEFAULT_CRON } from './config';
import { DRAW_JOB, DrawTicker } from './draw-ticker';

/**
 * LOTTERY_SCHEDULER=lock (the default): every instance's cron fires, and the scheduled job
 * lets exactly one of them run each tick, however late another's timer fires. No instance
 * is special, so there is nothing to fail over: the next tick simply goes to whoever fires
 * it first, and a tick whose drawer died mid-draw is drawn again by the next one to run.
 * Instances that let a tick pass report it from the job's lock events (see AppModule).
 */
@Injectable()
export class DrawScheduler {
  constructor(private readonly ticker: DrawTicker) {}

  // The expression is needed where the class is declared; main.ts has validated it by then.
  @Cron(process.env.LOTTERY_CRON ?? DEFAULT_CRON, { name: 'lottery-draw' })
  @ScheduledLock(DRAW_JOB, { onMissed: 'run' })
  async tick(): Promise<void> {
    await this.ticker.tick();
  }
}
