import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { LeaderOnly, ScheduledLock } from 'lockwarden';
import { DEFAULT_CRON } from './config';
import { DRAW_JOB, DrawTicker } from './draw-ticker';

const CRON = process.env.LOTTERY_CRON ?? DEFAULT_CRON;

/** The leadership the instances elect to run the scheduled draws. */
export const DRAW_LEADERSHIP = 'lottery-draws';

/**
 * LOTTERY_SCHEDULER=leader: the instances elect a leader, and only its cron draws. The
 * others' crons fire and pass (reported as "not leader"). When the leader stops, it resigns
 * and another takes over at once; when it crashes, another is elected once its lease lapses.
 *
 * The leader's tick still goes through the scheduled job, and the draw through the per-draw
 * lock and fenced write: leadership says who should draw, the job that each tick runs once
 * (and that a tick cut short by a dying leader is run again by the next), the lock and the
 * fence that a draw is recorded once even while a deposed leader's tick is still running.
 */
@Injectable()
export class LeaderDrawScheduler {
  constructor(private readonly ticker: DrawTicker) {}

  @Cron(CRON, { name: 'lottery-draw' })
  async tick(): Promise<void> {
    const ran = await this.drawAsLeader();
    if (ran === undefined) this.ticker.passed('not leader');
  }

  /** Resolves undefined without drawing while this instance does not lead (or the tick was run). */
  @LeaderOnly(DRAW_LEADERSHIP)
  @ScheduledLock(DRAW_JOB, { onMissed: 'run', schedule: CRON })
  async drawAsLeader(): Promise<true> {
    await this.ticker.tick();
    return true;
  }
}
