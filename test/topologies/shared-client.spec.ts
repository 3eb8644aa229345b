import { once } from 'node:events';
import { Global, Inject, Injectable, Module } from '@nestjs/common';
import type { INestApplicationContext, OnModuleDestroy } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { CacheModule } from '@nestjs/cache-manager';
import KeyvRedis, { Keyv } from '@keyv/redis';
import { Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { LockEngine, LockModule, LockService, Locked } from 'lockwarden';
import type { RedisClient } from 'lockwarden';
import { clusterForFile } from '../harness/redis-cluster';
import { openHandlesBeyond } from '../harness/open-handles';
import { redisForFile, uniquePrefix } from '../harness/redis';

/**
 * A client the application shares with other modules can be closed before the lock service
 * shuts down: @nestjs/cache-manager disconnects a Keyv store (and the node-redis client it was
 * given) in onModuleDestroy, which Nest runs before the lock service drains. The observer is
 * an admin connection of the test's own: the lock stays in Redis for as long as the locked
 * method runs, and is released when it ends, through a connection of Lockwarden's own.
 */

const server = redisForFile();

const SHARED = Symbol('SHARED');

/** The warnings and the log lines said. */
class Warnings {
  readonly lines: string[] = [];
  readonly logs: string[] = [];
  log(message: unknown): void {
    this.logs.push(String(message));
  }
  error(): void {}
  debug(): void {}
  verbose(): void {}
  warn(message: unknown): void {
    this.lines.push(String(message));
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** The locked job: says when it is in, and ends when told; what the observer saw meanwhile is kept. */
@Injectable()
class Job {
  readonly entered = deferred();
  readonly finish = deferred();
  /** Resolves when the lock's signal aborts: the drain has begun. */
  readonly abort = deferred();
  aborted: unknown;

  constructor(private readonly locks: LockService) {}

  @Locked('nightly')
  async run(): Promise<void> {
    const signal = this.locks.current()!.signal;
    signal.addEventListener('abort', () => this.abort.resolve(), { once: true });
    this.entered.resolve();
    await this.finish.promise;
    this.aborted = signal.aborted;
  }
}

/** An ioredis client whose owning module closes it on module destroy, as an app's RedisModule might. */
@Injectable()
class IoOwner implements OnModuleDestroy {
  constructor(@Inject(SHARED) private readonly client: Redis) {}
  async onModuleDestroy(): Promise<void> {
    await this.client.quit();
  }
}

interface Setup {
  name: string;
  /** The shared client, connected, and the modules that use it. */
  make(): Promise<{
    client: RedisClient;
    imports: unknown[];
    providers: unknown[];
    ended: Promise<unknown>;
    isClosed(): boolean;
  }>;
}

const SETUPS: Setup[] = [
  {
    name: "node-redis, closed by @nestjs/cache-manager's Keyv store",
    async make() {
      const client = createClient({ url: server.redis.url });
      client.on('error', () => undefined);
      await client.connect();
      return {
        client,
        ended: once(client, 'end'),
        providers: [],
        // @keyv/redis types its client with its own copy of `redis`; the object is the same kind.
        imports: [
          CacheModule.register({ stores: [new Keyv({ store: new KeyvRedis(client as never), namespace: 'cache' })] }),
        ],
        isClosed: () => !client.isOpen,
      };
    },
  },
  {
    name: "ioredis, closed by its owner's onModuleDestroy",
    async make() {
      const client = server.redis.client();
      await client.ping();
      return {
        client,
        providers: [IoOwner],
        imports: [],
        ended: once(client, 'end'),
        isClosed: () => client.status === 'end',
      };
    },
  },
];

describe.each(SETUPS)('a shared client closed before the lock service shuts down ($name)', (setup) => {
  it('keeps the lock while the method runs, releases it when it ends, says why, and closes what it opened', async () => {
    const keyPrefix = uniquePrefix('shared');
    const key = `${keyPrefix}{nightly}`;
    const shared = await setup.make();
    @Global()
    @Module({ providers: [{ provide: SHARED, useValue: shared.client }], exports: [SHARED] })
    class SharedModule {}

    const baseline = process.getActiveResourcesInfo();
    const warnings = new Warnings();
    const moduleRef = await Test.createTestingModule({
      imports: [
        SharedModule,
        ...(shared.imports as never[]),
        LockModule.forRoot({ client: shared.client, keyPrefix, shutdownGraceMs: 60_000 }),
      ],
      providers: [Job, ...(shared.providers as never[])],
    }).compile();
    moduleRef.useLogger(warnings);
    const ctx: INestApplicationContext = await moduleRef.init();
    const job = ctx.get(Job);

    const running = job.run();
    await job.entered.promise;
    const closing = ctx.close();
    // The drain aborts the holder's signal; by then every onModuleDestroy (the client's close) ran.
    await job.abort.promise;
    await shared.ended;
    // The lock is still in Redis while the method runs, whoever closed the shared client.
    expect(await server.admin.exists(key)).toBe(1);

    job.finish.resolve();
    await running;
    await closing;

    expect(job.aborted).toBe(true);
    expect(await server.admin.exists(key)).toBe(0);
    // The wait for the running work is said when it begins, naming the lock.
    expect(warnings.logs.filter((l) => l.includes('Shutting down: waiting') && l.includes('"nightly"'))).toHaveLength(
      1,
    );
    expect(warnings.lines.filter((l) => l.includes('given as `client` was closed'))).toHaveLength(1);
    expect(warnings.lines.filter((l) => l.includes('Could not release'))).toEqual([]);
    // The application's client stays as the application left it, and the stand-in is gone.
    expect(shared.isClosed()).toBe(true);
    expect(openHandlesBeyond(baseline)).toEqual([]);
  });
});

describe('a node-redis client never connected', () => {
  it('is served through a connection of Lockwarden’s own, said once, and left unconnected', async () => {
    const client = createClient({ url: server.redis.url });
    client.on('error', () => undefined);
    const warnings = new Warnings();
    const keyPrefix = uniquePrefix('lazy');
    const engine = new LockEngine({ client, keyPrefix }, warnings);
    const seen = await engine.withLock('k', async () => server.admin.exists(`${keyPrefix}{k}`));
    expect(seen).toBe(1);
    expect(await server.admin.exists(`${keyPrefix}{k}`)).toBe(0);
    await engine.close();
    expect(warnings.lines.filter((l) => l.includes('given as `client` is not connected'))).toHaveLength(1);
    expect(client.isOpen).toBe(false);
  });
});

describe('a Cluster client closed while a lock is held', () => {
  const nodes = clusterForFile({ masters: 3 });

  it.each(['ioredis', 'node-redis'] as const)(
    'releases the lock through a Cluster connection of Lockwarden’s own (%s)',
    async (kind) => {
      let client: RedisClient;
      let close: () => Promise<unknown>;
      if (kind === 'ioredis') {
        const io = nodes.cluster.client();
        await io.ping();
        client = io;
        close = () => io.quit().then(() => (io.status === 'end' ? undefined : once(io, 'end')));
      } else {
        const nr = createCluster({
          rootNodes: nodes.cluster.startupNodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })),
        });
        nr.on('error', () => undefined);
        await nr.connect();
        client = nr;
        close = () => nr.close();
      }
      const warnings = new Warnings();
      const keyPrefix = uniquePrefix('cl');
      const engine = new LockEngine({ client, keyPrefix }, warnings);
      const observer = nodes.cluster.client();
      const key = `${keyPrefix}{k}`;
      const handle = await engine.acquire('k');
      await close();
      expect(await observer.exists(key)).toBe(1);
      await handle.release();
      expect(await observer.exists(key)).toBe(0);
      await engine.close();
      await observer.quit();
      expect(warnings.lines.filter((l) => l.includes('given as `client` was closed'))).toHaveLength(1);
    },
  );
});
