import { Inject, Module } from '@nestjs/common';
import type { DynamicModule, OnApplicationShutdown } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Redis } from 'ioredis';
import { LockModule } from 'lockwarden';
import type { LockEvent } from 'lockwarden';
import { LockDashboardModule } from 'lockwarden/dashboard';
import type { LotteryConfig } from './config';
import { drawIdOf } from './config';
import { DRAW_JOB, DrawTicker } from './draw-ticker';
import { DrawScheduler } from './draw.scheduler';
import { DrawService } from './draw.service';
import { DrawsController } from './draws.controller';
import { LeaderDrawScheduler } from './leader-draw.scheduler';
import { LOTTERY_CONFIG, LOTTERY_DATA } from './lottery.tokens';
import { PrizeOffice } from './prize-office';
import { Reporter } from './reporter';

/** The lottery sample: scheduled and on-demand draws, each recorded once across instances, winners announced a few calls at a time. */
@Module({})
export class AppModule implements OnApplicationShutdown {
  constructor(@Inject(LOTTERY_DATA) private readonly data: Redis) {}

  static forConfig(config: LotteryConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ScheduleModule.forRoot(),
        LockModule.forRoot({
          redis: config.redisUrl,
          instanceId: config.instanceId,
          leaseMs: config.leaseMs,
          onEvent: config.report ? reportLockEvent(config.instanceId) : undefined,
        }),
        // The live lock page at /locks. A real app puts it behind its admin guard (`guards`).
        LockDashboardModule.forRoot({ path: '/locks' }),
      ],
      controllers: [DrawsController],
      providers: [
        { provide: LOTTERY_CONFIG, useValue: config },
        { provide: LOTTERY_DATA, useFactory: () => new Redis(config.dataUrl) },
        Reporter,
        PrizeOffice,
        DrawService,
        DrawTicker,
        config.scheduler === 'leader' ? LeaderDrawScheduler : DrawScheduler,
      ],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.data.quit();
  }
}

/**
 * Lock events as report lines: locks for the demo's timeline, and each scheduled tick this
 * instance let pass (another instance had it, or it came while a draw still ran), so that
 * whoever watches sees every instance's answer to every tick.
 */
function reportLockEvent(instanceId: string): (event: LockEvent) => void {
  return (event) => {
    if (event.key === DRAW_JOB && event.tick && (event.type === 'skipped' || event.type === 'overrun')) {
      const line = { event: 'draw', t: Date.now(), drawId: drawIdOf(event.tick), source: 'cron', instanceId, ms: 0 };
      process.stdout.write(`LOTTERY ${JSON.stringify({ ...line, action: event.type })}\n`);
      return;
    }
    if (event.type !== 'acquired' && event.type !== 'released' && event.type !== 'lost') return;
    const line = {
      event: 'lock',
      t: Date.now(),
      instanceId,
      type: event.type,
      key: event.key,
      token: event.fencingToken,
    };
    process.stdout.write(`LOTTERY ${JSON.stringify(line)}\n`);
  };
}
