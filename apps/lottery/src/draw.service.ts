import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { LockService, Locked } from 'lockwarden';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LotteryConfig } from './config';
import { WINNERS } from './config';
import { fencedWrite, PENDING_KEY, readDraw, USERS_KEY } from './draw-store';
import type { DrawResult, RecordOutcome } from './draw-store';
import { LOTTERY_CONFIG, LOTTERY_DATA } from './lottery.tokens';
import { pickWinners } from './pick-winners';
import { PrizeOffice } from './prize-office';
import { Reporter } from './reporter';

/** What one call of draw() did. */
export interface DrawOutcome {
  readonly outcome: RecordOutcome;
  /** The recorded result: ours, or the one recorded before (absent while a newer holder is still drawing). */
  readonly result: DrawResult | undefined;
  readonly fencingToken: number;
}

/**
 * Draws the winners of one draw, once across all instances.
 *
 * The lock makes sure only one instance draws at a time; `lockAtLeastMs` keeps
 * callers that come just after a draw (an HTTP retry, a second instance's request) from
 * drawing it again; scheduled ticks are deduplicated before that, by the job; the
 * fenced write makes sure that a holder which lost its lock (a long pause, a
 * network cut) can never record over, or beside, the holder that replaced it.
 * The winners are then announced to the prize office (PrizeOffice), a few calls
 * at a time across all instances.
 */
@Injectable()
export class DrawService {
  constructor(
    private readonly locks: LockService,
    private readonly reporter: Reporter,
    private readonly prizeOffice: PrizeOffice,
    @Inject(LOTTERY_CONFIG) private readonly config: LotteryConfig,
    @Inject(LOTTERY_DATA) private readonly data: Redis,
  ) {}

  /** Resolves `undefined` without drawing when another instance holds this draw. */
  @Locked('lottery:{0}', { onBusy: 'skip', lockAtLeastMs: 60_000, maxHoldMs: 10 * 60_000 })
  async draw(drawId: string): Promise<DrawOutcome | undefined> {
    const lock = this.locks.current(`lottery:${drawId}`)!;
    const fencingToken = await lock.fencingToken();
    const claim = await fencedWrite(this.data, drawId, fencingToken, 'claim');
    this.reporter.emit('drawing', { drawId, fencingToken, instanceId: this.config.instanceId, claim });
    if (claim === 'duplicate') {
      await this.data.srem(PENDING_KEY, drawId);
      await this.prizeOffice.catchUp(drawId); // its drawer recorded it but may have died announcing
    }
    if (claim === 'stale' || claim === 'duplicate') {
      return { outcome: claim, result: await readDraw(this.data, drawId), fencingToken };
    }
    await this.data.sadd(PENDING_KEY, drawId);
    await this.prizeOffice.expect(drawId);

    if (this.config.drawDelayMs > 0) await sleep(this.config.drawDelayMs, undefined, { signal: lock.signal });
    const winners = pickWinners(await this.data.smembers(USERS_KEY), WINNERS);
    const result: DrawResult = {
      drawId,
      winners,
      instanceId: this.config.instanceId,
      fencingToken,
      drawnAt: new Date().toISOString(),
    };
    const outcome = await fencedWrite(this.data, drawId, fencingToken, 'record', result);
    if (outcome !== 'stale') await this.data.srem(PENDING_KEY, drawId);
    // Still holding the draw's lock, so no other instance announces this draw at the same time.
    if (outcome === 'recorded') await this.prizeOffice.announce(result);
    return { outcome, result: outcome === 'recorded' ? result : await readDraw(this.data, drawId), fencingToken };
  }
}
