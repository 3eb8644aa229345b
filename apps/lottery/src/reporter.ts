import { Inject, Injectable } from '@nestjs/common';
import type { LotteryConfig } from './config';
import { LOTTERY_CONFIG } from './lottery.tokens';

/** One machine-readable line per event on stdout (LOTTERY_REPORT=1), which the demo reads. */
@Injectable()
export class Reporter {
  constructor(@Inject(LOTTERY_CONFIG) private readonly config: LotteryConfig) {}

  emit(event: string, fields: Record<string, unknown>): void {
    if (this.config.report) process.stdout.write(`LOTTERY ${JSON.stringify({ event, t: Date.now(), ...fields })}\n`);
  }
}
