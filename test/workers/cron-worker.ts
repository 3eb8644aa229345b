// A Nest app instance with a scheduled job, for the cross-process dedup test. The parent
// fires the job on this instance by pushing to a Redis list; the instance prints
// "ran" or "skipped" for each firing.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { Redis } from 'ioredis';
import { LockModule, ScheduledLock } from '../../libs/lockwarden/src';
import { workerMain } from './worker-main';

const { REDIS, PREFIX, NAME = 'x', AT_LEAST_MS = '60000' } = process.env;

@Injectable()
class DailyDraw {
  @Cron('0 0 12 * * *', { name: 'daily-draw' })
  @ScheduledLock('daily-draw', { lockAtLeastMs: Number(AT_LEAST_MS) })
  async run(): Promise<string> {
    return 'ran';
  }
}

@Module({
  imports: [ScheduleModule.forRoot(), LockModule.forRoot({ redis: REDIS!, keyPrefix: PREFIX, instanceId: NAME })],
  providers: [DailyDraw],
})
class AppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const commands = new Redis(REDIS!);
  console.log('ready');
  for (;;) {
    const [, command] = (await commands.blpop(`${PREFIX}fire:${NAME}`, 0))!;
    if (command === 'stop') break;
    const result = await app.get(DailyDraw).run();
    console.log(result ?? 'skipped');
  }
  commands.disconnect();
  await app.close();
}

workerMain(main);
