import { Inject, Injectable, Module } from '@nestjs/common';
import type { INestApplicationContext, OnApplicationBootstrap } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockAbortedError, LockConfigError, LockModule, LockService } from 'lockwarden';
import type { LockHandle } from 'lockwarden';
import { openHandlesBeyond } from '../harness/open-handles';
import { redisForFile, startRedis, uniquePrefix } from '../harness/redis';

const server = redisForFile();

@Injectable()
class ReportService {
  constructor(readonly locks: LockService) {}

  build(): Promise<number> {
    return this.locks.withLock('report', (lock) => lock.fencingToken());
  }
}

const CONFIG = Symbol('CONFIG');

@Module({ providers: [{ provide: CONFIG, useFactory: () => ({ url: server.redis.url }) }], exports: [CONFIG] })
class ConfigModule {}

async function app(imports: unknown[], providers: unknown[] = [ReportService]): Promise<INestApplicationContext> {
  const moduleRef = await Test.createTestingModule({
    imports: imports as never[],
    providers: providers as never[],
  }).compile();
  return moduleRef.init();
}

describe('LockModule', () => {
  it('forRoot provides an injectable LockService that locks', async () => {
    const ctx = await app([LockModule.forRoot({ redis: server.redis.url, keyPrefix: uniquePrefix('mod') })]);
    try {
      expect(await ctx.get(ReportService).build()).toBeGreaterThan(0);
    } finally {
      await ctx.close();
    }
  });

  it('forRootAsync builds its options from injected providers, and isGlobal shares it', async () => {
    @Injectable()
    class Deep {
      constructor(@Inject(LockService) readonly locks: LockService) {}
    }
    @Module({ providers: [Deep], exports: [Deep] })
    class FeatureModule {}

    const ctx = await app([
      LockModule.forRootAsync({
        isGlobal: true,
        imports: [ConfigModule],
        inject: [CONFIG],
        useFactory: (config: { url: string }) => ({ redis: config.url, keyPrefix: uniquePrefix('async') }),
      }),
      FeatureModule,
    ]);
    try {
      const locks = ctx.get(Deep).locks;
      expect(await locks.withLock('x', (l) => l.fencingToken())).toBeGreaterThan(0);
    } finally {
      await ctx.close();
    }
  });

  it('fails at bootstrap with LockConfigError on bad options', async () => {
    await expect(app([LockModule.forRoot({ redis: server.redis.url, leaseMs: 1 })])).rejects.toBeInstanceOf(
      LockConfigError,
    );
    await expect(
      app([LockModule.forRoot({ redis: server.redis.url, waitMS: 5 } as unknown as { redis: string })]),
    ).rejects.toThrow(/Unknown lock module option "waitMS"/);
    // The list names every option the module takes, its own and Nest's included.
    await expect(
      app([LockModule.forRoot({ redis: server.redis.url, clockToken: true } as unknown as { redis: string })]),
    ).rejects.toThrow(/Allowed: .*commandTimeoutMs.*isGlobal.*retryAfterMs/);
  });

  it('uses a client it was given and never closes it', async () => {
    const client = server.redis.client();
    const ctx = await app([LockModule.forRoot({ client, keyPrefix: uniquePrefix('given') })]);
    expect(await ctx.get(ReportService).build()).toBeGreaterThan(0);
    await ctx.close();
    expect(await client.ping()).toBe('PONG');
    await client.quit();
  });
});

describe('app.close()', () => {
  it('aborts holders, rejects waiters, releases what holders give back, leaves the rest to expire, and leaves no open handles', async () => {
    const keyPrefix = uniquePrefix('close');
    const baseline = process.getActiveResourcesInfo();
    const ctx = await app([
      LockModule.forRoot({ redis: server.redis.url, keyPrefix, leaseMs: 1_000, shutdownGraceMs: 300 }),
    ]);
    const locks = ctx.get(LockService);
    const held: LockHandle = await locks.acquire('held');
    // The documented pattern: a holder that stops when its signal aborts gives its lock back.
    held.signal.addEventListener('abort', () => void held.release());
    const stuck = await locks.acquire('stuck', { leaseMs: 60_000, renew: false });
    const waiting = locks.acquire('held', { waitMs: 60_000 }).catch((e: unknown) => e);
    expect(await server.admin.exists(`${keyPrefix}{held}`, `${keyPrefix}{stuck}`)).toBe(2);

    await ctx.close();

    expect(await waiting).toBeInstanceOf(LockAbortedError);
    expect(held.signal.aborted).toBe(true);
    expect(await server.admin.exists(`${keyPrefix}{held}`)).toBe(0);
    // Nobody gave "stuck" back: its code may still run, so it is left to its lease, not released.
    expect(stuck.signal.aborted).toBe(true);
    expect(stuck.isHeld()).toBe(false);
    expect(await server.admin.pttl(`${keyPrefix}{stuck}`)).toBeGreaterThan(0);
    expect(openHandlesBeyond(baseline)).toEqual([]);
  });
});

describe('app.close() with Redis gone', () => {
  it('still finishes, and leaves no open handles', async () => {
    const own = await startRedis({ own: true });
    const baseline = process.getActiveResourcesInfo();
    const ctx = await app([LockModule.forRoot({ redis: own.url, commandTimeoutMs: 200, shutdownGraceMs: 200 })]);
    const held = await ctx.get(LockService).acquire('k');
    await own.stop();
    await ctx.close();
    expect(held.signal.aborted).toBe(true);
    expect(openHandlesBeyond(baseline)).toEqual([]);
  });
});

describe('shutdown hooks', () => {
  class Lines {
    readonly debugs: string[] = [];
    private waiting: { match: RegExp; resolve: () => void }[] = [];
    log(): void {}
    error(): void {}
    warn(): void {}
    verbose(): void {}
    debug(message: unknown): void {
      const text = String(message);
      this.debugs.push(text);
      this.waiting = this.waiting.filter((w) => {
        if (!w.match.test(text)) return true;
        w.resolve();
        return false;
      });
    }
    /** Resolves once a debug line matching `match` has been logged. */
    seen(match: RegExp): Promise<void> {
      if (this.debugs.some((d) => match.test(d))) return Promise.resolve();
      return new Promise((resolve) => this.waiting.push({ match, resolve }));
    }
  }

  /** Takes a lock while the application bootstraps, as a migration step would. */
  @Injectable()
  class Migration implements OnApplicationBootstrap {
    constructor(private readonly locks: LockService) {}

    async onApplicationBootstrap(): Promise<void> {
      await this.locks.withLock('migrate', () => undefined);
    }
  }

  /**
   * Boots like a cron worker: createApplicationContext, then maybe enableShutdownHooks() right
   * after, with a lock taken during bootstrap or after it (or none), and returns what was said
   * about the hooks once the check has made up its mind.
   */
  async function boot(hooks: boolean, lockAt: 'bootstrap' | 'after' | 'never'): Promise<string[]> {
    const lines = new Lines();
    const moduleRef = await Test.createTestingModule({
      // Hooks found off are looked at again a lease after bootstrap: a short one keeps this quick
      // where they stay off. Where they are turned on, bootstrap and enableShutdownHooks() must
      // fit in that lease however loaded the machine is: seconds.
      imports: [
        LockModule.forRoot({ redis: server.redis.url, keyPrefix: uniquePrefix('hooks'), leaseMs: hooks ? 5_000 : 300 }),
      ],
      providers: lockAt === 'bootstrap' ? [Migration] : [],
    }).compile();
    moduleRef.useLogger(lines);
    const before = process.listenerCount('SIGTERM');
    await moduleRef.init();
    if (hooks) moduleRef.enableShutdownHooks(['SIGTERM']);
    if (lockAt === 'after') await (await moduleRef.get(LockService).acquire('job')).release();
    if (lockAt === 'after' && hooks) {
      await new Promise((resolve) => setImmediate(resolve)); // the check runs just after the grant
    } else if (lockAt === 'bootstrap' && hooks) {
      // Found off during bootstrap, then on once it was over (or, wrongly, warned about).
      await lines.seen(/Shutdown hooks are on|enableShutdownHooks/);
    } else if (lockAt !== 'never') {
      await lines.seen(/enableShutdownHooks/);
    }
    await moduleRef.close();
    expect(process.listenerCount('SIGTERM')).toBeLessThanOrEqual(before);
    return lines.debugs.filter((d) => d.includes('enableShutdownHooks'));
  }

  it('says so when app.enableShutdownHooks() was not called, and only then', async () => {
    expect(await boot(false, 'after')).toHaveLength(1);
    // The usual cron worker turns the hooks on right after the context is created: no false warning.
    expect(await boot(true, 'after')).toEqual([]);
    // Nothing held, nothing to leave behind: nothing said.
    expect(await boot(false, 'never')).toEqual([]);
  });

  it('says nothing when a lock taken during bootstrap came before hooks turned on right after it', async () => {
    expect(await boot(true, 'bootstrap')).toEqual([]);
    expect(await boot(false, 'bootstrap')).toHaveLength(1);
  });
});
