import { Inject, Injectable, Logger } from '@nestjs/common';
import { LockService } from 'lockwarden';
import type { LotteryConfig } from './config';
import { drawIdOf, tickDrawId } from './config';
import { DrawService } from './draw.service';
import { PrizeOffice } from './prize-office';
import { LOTTERY_CONFIG } from './lottery.tokens';
import { Reporter } from './reporter';

/** The scheduled job's name: its lock, and the key its tick records live under. */
export const DRAW_JOB = 'lottery:draws';

/**
 * What one scheduled tick does, whichever scheduler fired it: draw it, then announce any
 * draw the prize office was not fully told of. A tick whose drawer died mid-draw is run
 * again by the next instance to take the job (`onMissed: 'run'` on the schedulers).
 */
@Injectable()
export class DrawTicker {
  private readonly logger = new Logger('DrawScheduler');

  constructor(
    private readonly draws: DrawService,
    private readonly reporter: Reporter,
    private readonly prizeOffice: PrizeOffice,
    private readonly locks: LockService,
    @Inject(LOTTERY_CONFIG) private readonly config: LotteryConfig,
  ) {}

  /** Runs inside the scheduled job (`@ScheduledLock`), which names the tick. */
  async tick(): Promise<void> {
    const tick = this.locks.currentTick()!;
    const drawId = drawIdOf(tick.at);
    await this.run(drawId, tick.catchUp ? 'catch-up' : 'cron');
    // Recorded but not fully announced (the office was down, or its caller died announcing):
    // this tick's holder announces it again, once per winner thanks to the idempotency keys.
    const unannounced = await this.prizeOffice.unannounced().catch(() => []);
    for (const id of unannounced.sort()) {
      if (id !== drawId) await this.run(id, 'catch-up');
    }
  }

  /** Reports a tick this instance let pass, so whoever watches sees every instance's answer. */
  passed(action: string, tick?: Date): void {
    this.reporter.emit('draw', {
      drawId: tick ? drawIdOf(tick) : tickDrawId(this.config.cron, new Date()),
      source: 'cron',
      instanceId: this.config.instanceId,
      ms: 0,
      action,
    });
  }

  private async run(drawId: string, source: string): Promise<void> {
    const started = Date.now();
    let outcome: Record<string, unknown>;
    try {
      const done = await this.draws.draw(drawId);
      const action = done === undefined ? 'skipped' : done.outcome === 'recorded' ? 'drew' : done.outcome;
      outcome = { action, fencingToken: done?.fencingToken };
      if (action === 'drew') this.logger.log(`Drew ${drawId} (${source}): ${done!.result!.winners.join(', ')}`);
    } catch (err) {
      // Reported like any other outcome, so whoever watches the draws sees the failure, not a silence.
      outcome = { action: 'failed', error: (err as Error).message };
      this.logger.error(`Draw ${drawId} (${source}) failed: ${(err as Error).message}`);
    }
    this.reporter.emit('draw', {
      drawId,
      source,
      instanceId: this.config.instanceId,
      ms: Date.now() - started,
      ...outcome,
    });
  }
}
