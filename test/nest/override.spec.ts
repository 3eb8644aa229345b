import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LOCK_BACKEND, LOCK_MODULE_OPTIONS, LockConfigError, LockModule, LockService, Locked } from 'lockwarden';
import type { LockModuleOptions } from 'lockwarden';
import { MemoryLockBackend } from 'lockwarden/testing';

@Injectable()
class Payouts {
  runs = 0;

  @Locked('payout:{0}')
  async pay(id: string): Promise<string> {
    this.runs++;
    return id;
  }
}

@Module({
  imports: [
    LockModule.forRootAsync({
      isGlobal: true,
      useFactory: () => ({ redis: 'redis://127.0.0.1:1' }), // no Redis there: the test must not need it
    }),
  ],
  providers: [Payouts],
})
class AppModule {}

describe('testing a whole app that imports LockModule.forRootAsync()', () => {
  it('runs on the in-memory backend when LOCK_BACKEND is overridden, as the README shows', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(LOCK_BACKEND)
      .useValue(new MemoryLockBackend())
      .compile();
    const app = await moduleRef.init();
    try {
      expect(await app.get(Payouts).pay('7')).toBe('7');
      const lock = await app.get(LockService).acquire('payout:7');
      expect(await app.get(LockService).tryAcquire('payout:7')).toBeNull();
      await lock.release();
    } finally {
      await app.close();
    }
  });

  it('needs no redis option when LOCK_MODULE_OPTIONS is overridden too, as docs/testing.md shows', async () => {
    let factoryRan = false;
    @Module({
      imports: [
        LockModule.forRootAsync({
          isGlobal: true,
          useFactory: () => {
            factoryRan = true;
            throw new Error('Configuration key "REDIS_URL" does not exist');
          },
        }),
      ],
      providers: [Payouts],
    })
    class ConfiguredApp {}
    const moduleRef = await Test.createTestingModule({ imports: [ConfiguredApp] })
      .overrideProvider(LOCK_MODULE_OPTIONS)
      .useValue({ keyPrefix: 'app:lock:' } satisfies LockModuleOptions)
      .overrideProvider(LOCK_BACKEND)
      .useValue(new MemoryLockBackend())
      .compile();
    const app = await moduleRef.init();
    try {
      expect(factoryRan).toBe(false);
      expect(await app.get(Payouts).pay('8')).toBe('8');
      const lock = await app.get(LockService).acquire('payout:8');
      expect((await app.get(LockService).inspect('payout:8')).held).toBe(true);
      await lock.release();
    } finally {
      await app.close();
    }
  });

  it('still refuses, at bootstrap, a LockModule whose options name no Redis', async () => {
    @Module({ imports: [LockModule.forRoot({ keyPrefix: 'app:lock:' })] })
    class NoRedisApp {}
    const compiled = Test.createTestingModule({ imports: [NoRedisApp] }).compile();
    await expect(compiled).rejects.toThrow(LockConfigError);
    await expect(compiled).rejects.toThrow('The redis option is required');
  });
});
