// The sources of the apps packaging.spec.ts installs the packed library into: written the way
// a user writes them, compiled by each app's own tsconfig.

/** Every public entry point, as a user's TypeScript imports it. */
export const CHECK_SOURCE = `import 'reflect-metadata';
import { LOCK_BACKEND, LockEngine, LockModule, LockService, Locked } from 'lockwarden';
import type { LockHandle, LockModuleOptions } from 'lockwarden';
import { LockHealthIndicator } from 'lockwarden/health';
import { LockTestingModule, MemoryLockBackend } from 'lockwarden/testing';
import { LockDashboardModule } from 'lockwarden/dashboard';
import type { LockDashboardOptions } from 'lockwarden/dashboard';
const options: LockModuleOptions = { redis: 'redis://127.0.0.1:6380' };
const handle: LockHandle | undefined = undefined;
const dashboard: LockDashboardOptions = { path: '/locks' };
export const all = [LOCK_BACKEND, LockEngine, LockModule, LockService, Locked, LockHealthIndicator, LockTestingModule, MemoryLockBackend, LockDashboardModule, options, handle, dashboard];
`;

/** A decorated service and the app module, the way a user writes them. */
const SERVICE_SOURCE = `import { Injectable } from '@nestjs/common';
import { Locked } from 'lockwarden';

@Injectable()
export class Payouts {
  runs = 0;

  @Locked('payout:{0}')
  async pay(id: string): Promise<string> {
    this.runs++;
    return id;
  }
}
`;

const MODULE_SOURCE = `import { Module } from '@nestjs/common';
import { LockModule } from 'lockwarden';
import { Payouts } from './payouts.js';

@Module({
  imports: [
    LockModule.forRootAsync({
      isGlobal: true,
      useFactory: () => ({ redis: process.env.REDIS_URL ?? 'redis://127.0.0.1:1', keyPrefix: process.env.KEY_PREFIX }),
    }),
  ],
  providers: [Payouts],
})
export class AppModule {}
`;

/**
 * The app as deployed: shutdown hooks on. It takes a lock, sees it busy from a second acquire,
 * runs the decorated method, then holds 'deploy' in running work that stops when its signal
 * aborts. On SIGTERM the work ends and its lock is released.
 */
const MAIN_SOURCE = `import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { LockService, LockTimeoutError } from 'lockwarden';
import { AppModule } from './app.module.js';
import { Payouts } from './payouts.js';

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  app.enableShutdownHooks();
  const locks = app.get(LockService);
  const token = await locks.withLock('k', (lock) => lock.fencingToken());
  const held = await locks.acquire('k');
  const err: unknown = await locks.acquire('k', { waitMs: 0 }).catch((e: unknown) => e);
  await held.release();
  const paid = await app.get(Payouts).pay('7');
  console.log(JSON.stringify({ token, timeout: err instanceof LockTimeoutError, paid }));
  void locks.withLock('deploy', async (lock) => new Promise<void>((done) => {
    void lock.fencingToken().then((t) => console.log('ready ' + t));
    lock.signal.addEventListener('abort', () => done());
  }));
}
void main();
`;

/** The README's recipe for testing a whole app without Redis, as the user's own Jest test. */
const TEST_SOURCE = `import 'reflect-metadata';
import { expect, test } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { LOCK_BACKEND, LockService } from 'lockwarden';
import { MemoryLockBackend } from 'lockwarden/testing';
import { AppModule } from './app.module.js';
import { Payouts } from './payouts.js';

test('the app runs on the in-memory backend, with no Redis', async () => {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
    .overrideProvider(LOCK_BACKEND)
    .useValue(new MemoryLockBackend())
    .compile();
  const app = await moduleRef.init();
  const locks = app.get(LockService);
  expect(await app.get(Payouts).pay('7')).toBe('7');
  const held = await locks.acquire('payout:7');
  expect(await locks.tryAcquire('payout:7')).toBeNull();
  await held.release();
  await app.close();
});
`;

/** The app's files under src/, by name. */
export const APP_SOURCES: Record<string, string> = {
  'payouts.ts': SERVICE_SOURCE,
  'app.module.ts': MODULE_SOURCE,
  'main.ts': MAIN_SOURCE,
  'app.test.ts': TEST_SOURCE,
};
