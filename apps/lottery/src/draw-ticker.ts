import { Inject, Injectable, Logger } from '@nestjs/common';
import type { LotteryConfig } from './config';
import { tickDrawId } from './config';
import { DrawService } from './draw.service';
import { PrizeOffice } from './prize-office';
import { LOTTERY_CONFIG } from './lottery.tokens';
import { Reporter } from './reporter';

/** What one scheduled tick does, whichever scheduler fired it: draw it, then any draw a crash left unfinished. */
@Injectable()
export class DrawTicker {
  private readonly logger = new Logger('DrawScheduler');

  constructor(
    private readonly draws: DrawService,
    private readonly reporter: Reporter,
    private readonly prizeOffice: PrizeOffice,
    @Inject(LOTTERY_CONFIG) private readonly config: LotteryConfig,
  ) {}

  /** The draw id of a tick that fired now. */
  drawId(): string {
    return tickDrawId(this.config.cron, new Date());
  }

  async tick(): Promise<void> {
    const drawId = this.drawId();
    await this.run(drawId, 'cron');
    // A drawer that crashed mid-draw left its draw pending; its lock lapses with the lease,
    // so the next tick, on whichever instance gets the lock, draws it (once, thanks to the fence).
    // The same goes for a draw recorded but not fully announced to the prize office.
    const missed = await Promise.all([this.draws.pending(), this.prizeOffice.unannounced()]).catch(() => [[], []]);
    for (const id of [...new Set(missed.flat())].sort()) {
      if (id !== drawId) await this.run(id, 'catch-up');
    }
  }

  /** Reports a tick this instance let pass, so whoever watches sees every instance's answer. */
  passed(action: string): void {
    this.reporter.emit('draw', {
      drawId: this.drawId(),
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
