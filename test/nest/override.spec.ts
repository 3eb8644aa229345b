import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LOCK_BACKEND, LockModule, LockService, Locked } from 'lockwarden';
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
});
