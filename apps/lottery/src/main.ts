import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { AppModule } from './app.module';
import { loadConfig, LotteryConfigError } from './config';
import type { LotteryConfig } from './config';
import { seedUsers } from './draw-store';

async function main(): Promise<void> {
  let config: LotteryConfig;
  try {
    config = loadConfig();
  } catch (err) {
    if (!(err instanceof LotteryConfigError)) throw err;
    console.error(`lottery: ${err.message}`);
    process.exitCode = 2;
    return;
  }
  const seeder = new Redis(config.dataUrl, { lazyConnect: true, maxRetriesPerRequest: 2 });
  const users = await seedUsers(seeder, config.users).finally(() => seeder.disconnect());

  const app = await NestFactory.create(AppModule.forConfig(config), {
    logger: config.report ? ['warn', 'error'] : ['log', 'warn', 'error'],
  });
  app.enableShutdownHooks();
  await app.listen(config.port, config.host);
  const { port } = app.getHttpServer().address() as AddressInfo;
  new Logger('Lottery').log(
    `Instance ${config.instanceId} on port ${port}: ${users} eligible users, draws on "${config.cron}"`,
  );
  if (config.report)
    process.stdout.write(
      `LOTTERY ${JSON.stringify({ event: 'ready', t: Date.now(), port, instanceId: config.instanceId })}\n`,
    );
}

main().catch((err: unknown) => {
  console.error(`lottery: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
