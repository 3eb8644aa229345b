// Valkey GLIDE as a third client: the shared behaviour suite through GlideClient on one
// server and through GlideClusterClient on a 3-master Cluster, Redis (7 here; 8.6 in its
// test:matrix leg) and (where built) Valkey 9. Every GLIDE client here is made with glideTls():
// in the TLS leg, which runs the two behaviour suites of this file, that hands it the run's
// test CA (as an application with a private CA would); elsewhere it adds nothing.
import { GlideClient, GlideClusterClient, Logger } from '@valkey/valkey-glide';
import { Redis } from 'ioredis';
import { LeadershipRegistry, LockBackendError, LockEngine, LockModule } from 'lockwarden';
import type { LockEngineOptions } from 'lockwarden';
import { describeLockBehaviour } from '../behaviour/lock-behaviour';
import { connectionOf } from '../../libs/lockwarden/src/core/redis/redis-client';
import { closeNow, engineFactory } from '../harness/engines';
import { expectServedAfterFailover } from '../harness/shard-failover';
import { redisForFile, redisName, uniquePrefix, valkey9 } from '../harness/redis';
import type { ServerKind } from '../harness/redis';
import { clusterForFile, RedisCluster } from '../harness/redis-cluster';
import { cells, describeCells, describeOnce, glideSuiteServer } from '../harness/cells';
import { adminOptions } from '../harness/tls';
import { glideTls } from '../harness/tls-clients';

// GLIDE's Rust core logs a MOVED reply or a reconnection as a warning; here they are caused on purpose.
beforeAll(() => Logger.setLoggerConfig('error'));

/**
 * Three GLIDE clients made by `connect` once the file's server is up, closed before it stops
 * (one per engine: an engine reads its client's pub/sub messages), and engines on them,
 * closed after each test; `pair()` is two engines on the first two, sharing a key prefix.
 */
function glideEngines<C extends GlideClient | GlideClusterClient>(
  file: { atEnd(...close: (() => unknown)[]): void },
  connect: () => Promise<C>,
  name: string,
) {
  const clients: C[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 3; i++) clients.push(await connect());
    file.atEnd(() => {
      for (const c of clients.splice(0)) c.close();
    });
  }, 60_000);
  const { engine } = engineFactory(() => {
    throw new Error('an engine here is given its GLIDE client');
  }, name);
  const pair = (options: Partial<LockEngineOptions> = {}): [LockEngine, LockEngine] => {
    const keyPrefix = uniquePrefix(name);
    return [
      engine({ client: clients[0], keyPrefix, ...options }),
      engine({ client: clients[1], keyPrefix, ...options }),
    ];
  };
  return { clients, engine, pair };
}

const SERVERS: [string, ServerKind][] = [
  [redisName, 'redis'],
  ...(valkey9 ? [['Valkey 9', 'valkey9'] as [string, ServerKind]] : []),
];

// npm test's cells: one server (Valkey 9 where it is built) and a Redis Cluster; the rest run in the matrix.
describeCells(
  cells(SERVERS, ([, server]) => server === glideSuiteServer(valkey9)),
  (name) => `through a GLIDE client, on ${name}`,
  (name, server) => {
    const file = redisForFile({ own: true, server });
    const { clients, engine, pair } = glideEngines(
      file,
      () =>
        GlideClient.createClient({
          addresses: [{ host: file.redis.process!.host, port: file.redis.process!.port }],
          ...glideTls(),
        }),
      `glide-${server}`,
    );

    it('takes, hands off and releases a lock between two engines, each on its own GLIDE client', async () => {
      const [a, b] = pair();
      const held = await a.acquire('k');
      const token = await held.fencingToken();
      const waiting = b.acquire('k', { waitMs: 30_000 });
      await held.release();
      const got = await waiting;
      expect(await got.fencingToken()).toBeGreaterThan(token);
      expect(await got.release()).toBe(true);
    });

    it('shares one GLIDE client between two engines and their leaderships, each hearing its own channels', async () => {
      const keyPrefix = uniquePrefix(`glide-shared-${server}`);
      // Two engines on one client, as a CLI or a second module beside the app's would be.
      const [a, b] = [0, 0].map((i) => engine({ client: clients[i], keyPrefix }));
      const c = engine({ client: clients[1], keyPrefix });
      // A leadership hand-off between the two, heard on the shared client's leadership channel.
      const [ra, rb] = [new LeadershipRegistry(a), new LeadershipRegistry(b)];
      const [la, lb] = [ra.leadership('shared'), rb.leadership('shared')];
      await la.campaign();
      const elected = lb.campaign();
      await la.resign();
      await elected;
      expect(lb.isLeader()).toBe(true);
      // A lock handed from one to the other, each told on its own inbox over the same client.
      const held = await a.acquire('k');
      const waiting = b.acquire('k', { waitMs: 30_000 });
      await held.release();
      const got = await waiting;
      // Closing one engine leaves the other's subscriptions in place: it still hears a release.
      await ra.close();
      await closeNow(a);
      const waitingAgain = c.acquire('k', { waitMs: 30_000 }).then(async (lock) => {
        await lock.release();
        const mine = await b.acquire('k', { waitMs: 30_000 });
        return mine.release();
      });
      await got.release();
      expect(await waitingAgain).toBe(true);
      await lb.resign();
      await rb.close();
    });

    it('delivers each message to every subscriber Lockwarden made on one client, for the channels it took', async () => {
      const connection = connectionOf(clients[1]);
      const [one, two] = [connection.subscriber(), connection.subscriber()];
      const heard: string[][] = [[], []];
      const next: ((m: string) => void)[] = [];
      const arrival = (i: number): Promise<string> => new Promise((resolve) => (next[i] = resolve));
      [one, two].forEach((sub, i) =>
        sub.listen({
          message: (channel, message) => {
            heard[i].push(`${channel}=${message}`);
            next[i]?.(message);
          },
          channels: () => [],
          resubscribed: () => undefined,
          error: () => undefined,
        }),
      );
      const prefix = uniquePrefix(`glide-subs-${server}`);
      await one.subscribe(`${prefix}:one`);
      await one.subscribe(`${prefix}:both`);
      await two.subscribe(`${prefix}:two`);
      await two.subscribe(`${prefix}:both`);
      const admin = file.redis.client();
      try {
        let got = [arrival(0), arrival(1)];
        await admin.publish(`${prefix}:both`, 'b1');
        await Promise.all(got);
        got = [arrival(0)];
        await admin.publish(`${prefix}:one`, 'o1');
        await got[0];
        got = [arrival(1)];
        await admin.publish(`${prefix}:two`, 't1');
        await got[0];
        // Closing one leaves the channel the other still wants subscribed.
        await one.close();
        got = [arrival(1)];
        await admin.publish(`${prefix}:both`, 'b2');
        await got[0];
        expect(heard[0]).toEqual([`${prefix}:both=b1`, `${prefix}:one=o1`]);
        expect(heard[1]).toEqual([`${prefix}:both=b1`, `${prefix}:two=t1`, `${prefix}:both=b2`]);
      } finally {
        admin.disconnect();
        await two.close();
      }
    });

    describeLockBehaviour(`GLIDE on ${name}`, () => ({
      pair,
      module: () => LockModule.forRoot({ client: clients[2], keyPrefix: uniquePrefix(`glide-nest-${server}`) }),
    }));
  },
);

/** A Redis Cluster always; Valkey 9 Cluster where Valkey 9 was built. */
const CLUSTERS: [string, string | undefined][] = [
  [redisName, undefined],
  ...(valkey9 ? [['Valkey 9', valkey9] as [string, string]] : []),
];

describeCells(
  cells(CLUSTERS, ([, binary]) => binary === undefined),
  (name) => `through a GLIDE cluster client, on a 3-master ${name} Cluster`,
  (name, binary) => {
    const nodes = clusterForFile({ masters: 3, binary });
    const { clients, pair } = glideEngines(
      nodes,
      () => GlideClusterClient.createClient({ addresses: nodes.cluster.startupNodes, ...glideTls() }),
      `glide-cluster-${name}`,
    );

    it('finds every primary, loads the scripts on each, and wakes a waiter on another slot owner', async () => {
      const [a, b] = pair();
      // Asked at once: the health check waits for the cluster to name its primaries.
      const first = await a.health();
      expect(first.servers).toBe(3);
      expect(first.serversUp).toBe(3);
      expect(first.reachable).toBe(true);
      // Keys on each master's slots: a release on each must reach its waiter through that shard.
      const keys = ['a', 'b', 'c', 'd', 'e', 'f'];
      for (const key of keys) {
        const held = await a.acquire(key);
        const waiting = b.acquire(key, { waitMs: 30_000 });
        await held.release();
        await (await waiting).release();
      }
      const health = await a.health();
      expect(health.servers).toBe(3);
      expect(health.serversUp).toBe(3);
      expect(health.scriptsLoaded).toBe(true);
      // The survey scans every primary by its address: locks held on each master are all found.
      const held = await Promise.all(keys.map((key) => a.acquire(key)));
      let survey = await a.survey();
      const found = new Set(survey.locks.map((l) => l.key));
      while (survey.cursor !== null) {
        survey = await a.survey({ cursor: survey.cursor });
        for (const l of survey.locks) found.add(l.key);
      }
      expect([...found].sort()).toEqual(keys);
      await Promise.all(held.map((l) => l.release()));
    });

    it('names the fix when a one-server GLIDE client is given a Cluster node', async () => {
      const single = await GlideClient.createClient({ addresses: [nodes.cluster.startupNodes[0]], ...glideTls() });
      const e = new LockEngine({ client: single, keyPrefix: uniquePrefix('glide-single-on-cluster') });
      try {
        // Keys spread over the three masters: those on another node's slots are refused with MOVED.
        const errors: unknown[] = [];
        for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) {
          await e.tryAcquire(key).then(
            (lock) => lock?.release(),
            (err: unknown) => errors.push(err),
          );
        }
        expect(errors.length).toBeGreaterThan(0);
        for (const err of errors) {
          expect(err).toBeInstanceOf(LockBackendError);
          expect((err as Error).message).toMatch(
            /node of a Redis Cluster.*GlideClusterClient\)\. The lock state is unknown\.$/,
          );
        }
      } finally {
        await closeNow(e);
        single.close();
      }
    });

    // The Valkey 9 cell alone: it runs in the matrix (npm test's GLIDE Cluster is Redis).
    if (binary)
      it("releases with each master's own DELIFEQ on Valkey 9, found per primary", async () => {
        const [a] = pair();
        const masters = nodes.cluster.startupNodes.map((n) => new Redis(n.port, n.host, adminOptions()));
        const perMaster = async (): Promise<number[]> =>
          Promise.all(
            masters.map(async (m) =>
              Number(/cmdstat_delifeq:calls=(\d+)/.exec(await m.info('commandstats'))?.[1] ?? 0),
            ),
          );
        try {
          const before = await perMaster();
          // The commands are looked up once the primaries are known: until then releases take the script.
          for (let i = 0; i < 1_000 && (await perMaster()).every((n, j) => n === before[j]); i++) {
            await (await a.acquire('warm')).release();
          }
          const from = await perMaster();
          // 'b', 'c' and 'a' hash to the first, second and third master's slots.
          for (const key of ['a', 'b', 'c']) expect(await (await a.acquire(key)).release()).toBe(true);
          const after = await perMaster();
          expect(after.map((n, i) => n - from[i])).toEqual([1, 1, 1]);
        } finally {
          for (const m of masters) m.disconnect();
        }
      });

    describeLockBehaviour(`GLIDE on a ${name} Cluster`, () => ({
      pair,
      module: () => LockModule.forRoot({ client: clients[2], keyPrefix: uniquePrefix(`glide-cluster-nest-${name}`) }),
    }));
  },
);

describeOnce('a GLIDE cluster client through a shard failover (3 masters + 3 replicas)', () => {
  it('keeps serving locks on the failed shard, and finds the promoted replica among the primaries', async () => {
    const replicated = await RedisCluster.start({ masters: 3, replicas: 1 });
    const client = await GlideClusterClient.createClient({ addresses: replicated.startupNodes, ...glideTls() });
    const e = new LockEngine({ client, keyPrefix: uniquePrefix('glide-fail'), leaseMs: 3_000 });
    try {
      await expectServedAfterFailover(replicated, e);
      // The list of primaries is asked for again once it is 5 s old: look until the dead master left it.
      let health = await e.health();
      while (health.serversUp !== 3 || health.servers !== 3) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        health = await e.health();
      }
      expect(health.reachable).toBe(true);
    } finally {
      await closeNow(e);
      client.close();
      await replicated.stop();
    }
  }, 90_000);
});
