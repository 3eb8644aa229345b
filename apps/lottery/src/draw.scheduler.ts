import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { DEFAULT_CRON } from './config';
import { DrawTicker } from './draw-ticker';

/**
 * LOTTERY_SCHEDULER=lock (the default): every instance's cron fires, and the per-draw lock
 * lets exactly one of them draw each tick. No instance is special, so there is nothing to
 * fail over: the next tick simply goes to whoever wins its lock.
 */
@Injectable()
export class DrawScheduler {
  constructor(private readonly ticker: DrawTicker) {}

  // The expression is needed where the class is declared; main.ts has validated it by then.
  @Cron(process.env.LOTTERY_CRON ?? DEFAULT_CRON, { name: 'lottery-draw' })
  async tick(): Promise<void> {
    await this.ticker.tick();
  }
}
