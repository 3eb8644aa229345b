import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { LockService } from 'lockwarden';
import type { LockHandle, Semaphore } from 'lockwarden';
import type { LotteryConfig } from './config';
import { readDraw } from './draw-store';
import type { DrawResult } from './draw-store';
import { LOTTERY_CONFIG, LOTTERY_DATA } from './lottery.tokens';
import { Reporter } from './reporter';

/** Draws claimed whose winners are not all announced yet: a drawer that crashed leaves its draw here. */
export const UNANNOUNCED_KEY = 'lottery:unannounced';

/**
 * Announces winners to the prize office, an outside HTTP service that takes only a few calls
 * at once. The limit holds across every instance: each call runs holding a permit of the
 * `lottery:prize-office` semaphore, so three instances announcing three draws together still
 * make at most `prizeOfficePermits` calls at a time.
 *
 * Every winner is announced at least once and the office applies each once: a call carries
 * an `Idempotency-Key`, and a draw stays in `lottery:unannounced` until all its calls
 * succeeded, so whoever next takes that draw's lock announces it again.
 */
@Injectable()
export class PrizeOffice implements OnModuleInit {
  private readonly logger = new Logger('PrizeOffice');
  private readonly calls: Semaphore;

  constructor(
    locks: LockService,
    private readonly reporter: Reporter,
    @Inject(LOTTERY_CONFIG) private readonly config: LotteryConfig,
    @Inject(LOTTERY_DATA) private readonly data: Redis,
  ) {
    this.calls = locks.semaphore('lottery:prize-office', { limit: config.prizeOfficePermits });
  }

  /**
   * The stored limit rules over the one a semaphore object is made with, so the configured
   * value is stored at start: the instance started last sets it for all.
   */
  async onModuleInit(): Promise<void> {
    if (this.config.prizeOfficeUrl) await this.calls.setLimit(this.config.prizeOfficePermits);
  }

  /** Notes, as a draw is claimed, that its winners will need announcing. */
  async expect(drawId: string): Promise<void> {
    if (this.config.prizeOfficeUrl) await this.data.sadd(UNANNOUNCED_KEY, drawId);
  }

  /** Announces every winner of a recorded draw; a failure is reported and retried at the draw's next lock holder. */
  async announce(result: DrawResult): Promise<void> {
    const url = this.config.prizeOfficeUrl;
    if (!url) return;
    const calls = await Promise.allSettled(
      result.winners.map((user) =>
        this.calls.withPermit((permit) => this.call(url, result, user, permit), { waitMs: 60_000 }),
      ),
    );
    const failed = calls.find((c): c is PromiseRejectedResult => c.status === 'rejected');
    if (failed) {
      const error = failed.reason instanceof Error ? failed.reason.message : String(failed.reason);
      this.logger.error(`Announcing ${result.drawId} failed, to be retried: ${error}`);
      this.reporter.emit('announced', { drawId: result.drawId, instanceId: this.config.instanceId, error });
      return;
    }
    await this.data.srem(UNANNOUNCED_KEY, result.drawId);
    this.reporter.emit('announced', { drawId: result.drawId, instanceId: this.config.instanceId });
  }

  /** Announces a draw recorded earlier whose announcement never finished. */
  async catchUp(drawId: string): Promise<void> {
    if (!this.config.prizeOfficeUrl || !(await this.data.sismember(UNANNOUNCED_KEY, drawId))) return;
    const result = await readDraw(this.data, drawId);
    if (result) await this.announce(result);
  }

  /** Draws to announce again, oldest first. */
  unannounced(): Promise<string[]> {
    return this.data.smembers(UNANNOUNCED_KEY).then((ids) => ids.sort());
  }

  private async call(url: string, result: DrawResult, user: string, permit: LockHandle): Promise<void> {
    // The permit's signal cancels the call if the permit is lost: no call runs without one.
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': `${result.drawId}:${user}` },
      body: JSON.stringify({ drawId: result.drawId, user, fencingToken: result.fencingToken }),
      signal: permit.signal,
    });
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`the prize office answered ${res.status} for ${user}`);
  }
}
