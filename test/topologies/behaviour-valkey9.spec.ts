import { Redis } from 'ioredis';
import { LockEngine, LockModule } from 'lockwarden';
import { describeLockBehaviour } from '../behaviour/lock-behaviour';
import { engineFactory } from '../harness/engines';
import { itOnce, REST_OF_CELLS } from '../harness/cells';
import { describeOnValkey9, redisForFile, uniquePrefix, valkey9 } from '../harness/redis';
import { RedisProcess } from '../harness/redis-process';
import { RedisCluster } from '../harness/redis-cluster';

/**
 * The shared behaviour suite against Valkey 9, which has its own compare-and-delete
 * (`DELIFEQ`): a release nobody waited for takes it instead of a script. Skipped where
 * tools/valkey9.sh has not built the server; npm test says so in one line.
 */
describeOnValkey9('on Valkey 9', () => {
  const valkey = redisForFile({ server: 'valkey9' });
  const { pair } = engineFactory(() => valkey.redis.url, 'behaviour-valkey9');

  /** How many times the server ran `command`, by its own count. */
  async function calls(command: string): Promise<number> {
    const m = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(await valkey.admin.info('commandstats'));
    return m ? Number(m[1]) : 0;
  }

  itOnce(
    "releases a lock nobody waited for with the server's DELIFEQ, and runs no script for the whole cycle",
    async () => {
      const engine = new LockEngine({ redis: valkey.redis.url, keyPrefix: uniquePrefix('native') });
      try {
        // The engine looks the command up once connected, off the way of any lock: cycle until it has.
        for (let i = 0; i < 1_000 && (await calls('delifeq')) === 0; i++)
          await (await engine.acquire('warm')).release();
        expect(await calls('delifeq')).toBeGreaterThan(0);
        const scripts = (await calls('evalsha')) + (await calls('eval'));
        const deletes = await calls('delifeq');
        for (let i = 0; i < 20; i++) await (await engine.acquire(`k${i % 3}`)).release();
        expect((await calls('evalsha')) + (await calls('eval'))).toBe(scripts);
        expect((await calls('delifeq')) - deletes).toBe(20);
        // A lock whose token was read (its value then carries it) goes the same way.
        const lock = await engine.acquire('fenced');
        expect(await lock.fencingToken()).toBeGreaterThan(0);
        const before = await calls('delifeq');
        expect(await lock.release()).toBe(true);
        expect((await calls('delifeq')) - before).toBe(1);
        expect(await valkey.admin.exists(`${engine.options.keyPrefix}{fenced}`)).toBe(0);
      } finally {
        await engine.close();
      }
    },
  );

  itOnce(
    'hands a lock someone waits for to the waiter: the marked value makes DELIFEQ refuse, and the script takes over',
    async () => {
      const keyPrefix = uniquePrefix('native-waited');
      const [a, b] = [
        new LockEngine({ redis: valkey.redis.url, keyPrefix }),
        new LockEngine({ redis: valkey.redis.url, keyPrefix }),
      ];
      try {
        const held = await a.acquire('k');
        const waiting = b.acquire('k', { waitMs: 30_000 });
        // The waiter's attempt marks the value (others wait): a compare-and-delete of the unmarked value must fail.
        while (!(await valkey.admin.get(`${keyPrefix}{k}`))?.endsWith('|w')) await new Promise((r) => setTimeout(r, 2));
        await held.release();
        const got = await waiting;
        expect(await got.fencingToken()).toBeGreaterThan(0);
        await got.release();
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    },
  );

  itOnce(
    'goes on releasing when its server is replaced by one without DELIFEQ (a failover to an older version)',
    async () => {
      const first = await RedisProcess.start({ binary: valkey9 });
      const engine = new LockEngine({
        redis: first.url,
        keyPrefix: uniquePrefix('native-gone'),
        commandTimeoutMs: 5_000,
      });
      let second: RedisProcess | undefined;
      try {
        const probe = new Redis(first.url);
        const used = async (): Promise<boolean> => /cmdstat_delifeq:calls=[1-9]/.test(await probe.info('commandstats'));
        for (let i = 0; i < 1_000 && !(await used()); i++) await (await engine.acquire('warm')).release();
        expect(await used()).toBe(true);
        probe.disconnect();
        // The same address, now Redis 7: the engine reconnects, and its next releases find no DELIFEQ.
        await first.stop();
        second = await RedisProcess.start({ port: first.port });
        const admin = new Redis(second.url);
        try {
          for (let i = 0; i < 5; i++) {
            const lock = await engine.acquire(`after-${i}`, { waitMs: 10_000 });
            expect(await lock.release()).toBe(true);
            expect(await admin.exists(`${engine.options.keyPrefix}{after-${i}}`)).toBe(0);
          }
        } finally {
          admin.disconnect();
        }
      } finally {
        await engine.close();
        await second?.destroy();
        await first.destroy();
      }
    },
  );

  itOnce("releases on a Valkey 9 Cluster with each master's DELIFEQ, and waiters still get their locks", async () => {
    const cluster = await RedisCluster.start({ binary: valkey9 });
    const keyPrefix = uniquePrefix('native-cluster');
    const engines = [0, 1].map(() => new LockEngine({ redis: { cluster: cluster.startupNodes }, keyPrefix }));
    const masters = cluster.startupNodes.map((n) => new Redis(n.port, n.host));
    const deletes = async (): Promise<number> => {
      let sum = 0;
      for (const m of masters)
        sum += Number(/cmdstat_delifeq:calls=(\d+)/.exec(await m.info('commandstats'))?.[1] ?? 0);
      return sum;
    };
    try {
      const [a, b] = engines;
      // Keys on every master (their hash tags spread over the slots).
      const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
      for (let i = 0; i < 1_000 && (await deletes()) === 0; i++) await (await a.acquire(keys[0])).release();
      for (const k of keys) expect(await (await a.acquire(k)).release()).toBe(true);
      expect(await deletes()).toBeGreaterThanOrEqual(keys.length);
      // Contended, across two engines: the waiter is handed each lock.
      for (const k of keys) {
        const held = await a.acquire(k);
        const waiting = b.acquire(k, { waitMs: 30_000 });
        await held.release();
        expect(await (await waiting).release()).toBe(true);
      }
    } finally {
      for (const m of masters) m.disconnect();
      await Promise.all(engines.map((e) => e.close()));
      await cluster.stop();
    }
  });

  // The suite on Valkey 9 through ioredis is a cell of the matrix: npm test runs it through GLIDE (glide.spec.ts).
  if (REST_OF_CELLS)
    describeLockBehaviour('Valkey 9', () => ({
      pair,
      module: () => LockModule.forRoot({ redis: valkey.redis.url, keyPrefix: uniquePrefix('behaviour-valkey9-nest') }),
    }));
});
