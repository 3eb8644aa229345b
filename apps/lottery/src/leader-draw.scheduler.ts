import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { LeaderOnly } from 'lockwarden';
import { DEFAULT_CRON } from './config';
import { DrawTicker } from './draw-ticker';

/** The leadership the instances elect to run the scheduled draws. */
export const DRAW_LEADERSHIP = 'lottery-draws';

/**
 * LOTTERY_SCHEDULER=leader: the instances elect a leader, and only its cron draws. The
 * others' crons fire and pass (reported as "not leader"). When the leader stops, it resigns
 * and another takes over at once; when it crashes, another is elected once its lease lapses.
 *
 * The draw itself still takes the per-draw lock and fences its write: leadership says who
 * should draw, the lock and the fence make sure a draw is recorded once even while a
 * deposed leader's tick is still running.
 */
@Injectable()
export class LeaderDrawScheduler {
  constructor(private readonly ticker: DrawTicker) {}

  @Cron(process.env.LOTTERY_CRON ?? DEFAULT_CRON, { name: 'lottery-draw' })
  async tick(): Promise<void> {
    const ran = await this.drawAsLeader();
    if (ran === undefined) this.ticker.passed('not leader');
  }

  /** Resolves undefined without drawing while this instance does not lead. */
  @LeaderOnly(DRAW_LEADERSHIP)
  async drawAsLeader(): Promise<true> {
    await this.ticker.tick();
    return true;
  }
}
