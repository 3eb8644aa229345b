// Valkey GLIDE as a third client: the shared behaviour suite through GlideClient on one
// server and through GlideClusterClient on a 3-master Cluster, Redis 7 and (where built) Valkey 9.
import { GlideClient, GlideClusterClient, Logger } from '@valkey/valkey-glide';
import { Redis } from 'ioredis';
import { LockEngine, LockModule } from 'lockwarden';
import type { LockEngineOptions } from 'lockwarden';
import { describeLockBehaviour } from './behaviour/lock-behaviour';
import { closeNow } from './harness/engines';
import { startRedis, uniquePrefix, valkey9 } from './harness/redis';
import type { RedisTarget, ServerKind } from './harness/redis';
import { RedisCluster } from './harness/redis-cluster';

const SERVERS: [string, ServerKind][] = [
  ['Redis 7', 'redis'],
  ...(valkey9 ? [['Valkey 9', 'valkey9'] as [string, ServerKind]] : []),
];

describe.each(SERVERS)('through a GLIDE client, on %s', (name, server) => {
  let target: RedisTarget;
  const clients: GlideClient[] = [];
  const engines: LockEngine[] = [];

  beforeAll(async () => {
    target = await startRedis({ own: true, server });
    const { host, port } = target.process!;
    // One client per engine: an engine reads its client's pub/sub messages.
    for (let i = 0; i < 3; i++) clients.push(await GlideClient.createClient({ addresses: [{ host, port }] }));
  });

  afterEach(async () => {
    await Promise.all(engines.splice(0).map(closeNow));
  });

  afterAll(async () => {
    for (const c of clients.splice(0)) c.close();
    await target.stop();
  });

  const pair = (options: Partial<LockEngineOptions> = {}): [LockEngine, LockEngine] => {
    const keyPrefix = uniquePrefix(`glide-${server}`);
    const made = [0, 1].map((i) => new LockEngine({ client: clients[i], keyPrefix, ...options })) as [
      LockEngine,
      LockEngine,
    ];
    engines.push(...made);
    return made;
  };

  it('takes, hands over and releases a lock between two engines, each on its own GLIDE client', async () => {
    const [a, b] = pair();
    const held = await a.acquire('k');
    const token = await held.fencingToken();
    const waiting = b.acquire('k', { waitMs: 30_000 });
    await held.release();
    const got = await waiting;
    expect(await got.fencingToken()).toBeGreaterThan(token);
    expect(await got.release()).toBe(true);
  });

  describeLockBehaviour(`GLIDE on ${name}`, () => ({
    pair,
    module: () => LockModule.forRoot({ client: clients[2], keyPrefix: uniquePrefix(`glide-nest-${server}`) }),
  }));
});

/** Redis 7 Cluster always; Valkey 9 Cluster where Valkey 9 was built. */
const CLUSTERS: [string, string | undefined][] = [
  ['Redis 7', undefined],
  ...(valkey9 ? [['Valkey 9', valkey9] as [string, string]] : []),
];

describe.each(CLUSTERS)('through a GLIDE cluster client, on a 3-master %s Cluster', (name, binary) => {
  let cluster: RedisCluster;
  const clients: GlideClusterClient[] = [];
  const engines: LockEngine[] = [];

  beforeAll(async () => {
    cluster = await RedisCluster.start({ masters: 3, binary });
    for (let i = 0; i < 3; i++) {
      clients.push(await GlideClusterClient.createClient({ addresses: cluster.startupNodes }));
    }
  }, 60_000);

  afterEach(async () => {
    await Promise.all(engines.splice(0).map(closeNow));
  });

  afterAll(async () => {
    for (const c of clients.splice(0)) c.close();
    await cluster.stop();
  });

  const pair = (options: Partial<LockEngineOptions> = {}): [LockEngine, LockEngine] => {
    const keyPrefix = uniquePrefix(`glide-cluster-${name}`);
    const made = [0, 1].map((i) => new LockEngine({ client: clients[i], keyPrefix, ...options })) as [
      LockEngine,
      LockEngine,
    ];
    engines.push(...made);
    return made;
  };

  it('finds every primary, loads the scripts on each, and wakes a waiter on another slot owner', async () => {
    const [a, b] = pair();
    // Keys on each master's slots: a release on each must reach its waiter through that shard.
    const keys = ['a', 'b', 'c', 'd', 'e', 'f'];
    for (const key of keys) {
      const held = await a.acquire(key);
      const waiting = b.acquire(key, { waitMs: 30_000 });
      await held.release();
      await (await waiting).release();
    }
    // The primaries come from CLUSTER NODES, asked when the client was first given: look until it answered.
    let health = await a.health();
    while (health.servers === 0 || !health.scriptsLoaded) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      health = await a.health();
    }
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

  (binary ? it : it.skip)("releases with each master's own DELIFEQ on Valkey 9, found per primary", async () => {
    const [a] = pair();
    const masters = cluster.startupNodes.map((n) => new Redis(n.port, n.host));
    const perMaster = async (): Promise<number[]> =>
      Promise.all(
        masters.map(async (m) => Number(/cmdstat_delifeq:calls=(\d+)/.exec(await m.info('commandstats'))?.[1] ?? 0)),
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
});

describe('a GLIDE cluster client through a shard failover (3 masters + 3 replicas)', () => {
  it('keeps serving locks on the failed shard, and finds the promoted replica among the primaries', async () => {
    const replicated = await RedisCluster.start({ masters: 3, replicas: 1 });
    // Its warnings of MOVED replies are what the failover causes on purpose.
    Logger.setLoggerConfig('error');
    const client = await GlideClusterClient.createClient({ addresses: replicated.startupNodes });
    const e = new LockEngine({ client, keyPrefix: uniquePrefix('glide-fail'), leaseMs: 3_000 });
    const probe = replicated.client();
    try {
      const masters = await replicated.masters();
      const victim = masters.find((m) => m.slots.length > 0)!;
      const keyOn = async (n: number): Promise<string> => {
        for (let i = 0; ; i++) {
          const k = `shard-${n}-${i}`;
          const slot = Number(await probe.cluster('KEYSLOT', `${e.options.keyPrefix}{${k}}`));
          if (victim.slots.some(([a, b]) => slot >= a && slot <= b)) return k;
        }
      };
      const [heldKey, laterKey] = [await keyOn(1), await keyOn(2)];
      const held = await e.acquire(heldKey);
      await replicated.nodes.find((n) => n.port === victim.port)!.kill();
      await replicated.waitUntilPromoted(victim.id);
      // The holder either kept its lock on the promoted replica or was told it lost it; never silence.
      const kept = await held.extend().then(
        () => true,
        () => false,
      );
      expect(kept || held.signal.aborted || !held.isHeld()).toBe(true);
      const later = await e.acquire(laterKey, { waitMs: 20_000 });
      expect(await later.fencingToken()).toBeGreaterThan(0);
      await later.release();
      await held.release().catch(() => undefined);
      // The list of primaries is asked for again once it is 5 s old: look until the dead master left it.
      let health = await e.health();
      while (health.serversUp !== 3 || health.servers !== 3) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        health = await e.health();
      }
      expect(health.reachable).toBe(true);
    } finally {
      probe.disconnect();
      await closeNow(e);
      client.close();
      await replicated.stop();
    }
  }, 90_000);
});
