import { LockEngine, type LockEngineOptions, type LockHandle } from 'lockwarden/core';
import { LockTimeoutError } from 'lockwarden/errors';
import type { Cluster, Redis } from 'ioredis';
import { FaultProxy } from '../harness/fault-proxy';
import { clusterForFile } from '../harness/redis-cluster';
import { redisForFile, uniquePrefix } from '../harness/redis';
import { closeNow } from '../harness/engines';
import { CLIENT_KINDS, clientMaker, clusterThroughProxies } from '../harness/clients';
import type { ClientKind } from '../harness/clients';

/**
 * A busy lock is reported as busy, however slow the waiter's subscriber is. The waiter's
 * engine reaches Redis through fault proxies that delay only its subscriber connection (from
 * its SUBSCRIBE on), so its attempts are answered at once while its subscription lands late:
 * - a wait budget that ends before the subscription lands settles with LockTimeoutError, not
 *   LockBackendError, and leaves nothing of the waiter held or queued;
 * - a release made before the subscription lands is not lost: the waiter takes the lock.
 * On one server and on a 3-master Cluster, through both clients.
 */
const server = redisForFile({ own: true });
const nodes = clusterForFile({ masters: 3 });
let single: FaultProxy;
let masters: FaultProxy[];
const engines: LockEngine[] = [];
const closers: (() => Promise<unknown>)[] = [];
const makers = { ioredis: clientMaker('ioredis'), 'node-redis': clientMaker('node-redis') };

beforeAll(async () => {
  single = await FaultProxy.start(server.redis.process!);
  server.atEnd(() => single.stop());
  masters = await Promise.all(nodes.cluster.startupNodes.map((node) => FaultProxy.start(node)));
  nodes.atEnd(() => Promise.all(masters.map((p) => p.stop())));
});

afterEach(async () => {
  for (const p of [single, ...masters]) p.pass();
  await Promise.all(engines.splice(0).map(closeNow));
  await Promise.all(closers.splice(0).map((close) => close()));
  await Promise.all(Object.values(makers).map((m) => m.closeClients()));
});

type Topology = 'one server' | 'Cluster';

/** Two engines on one key prefix: the holder straight to Redis, the waiter through the proxies. */
function pair(topology: Topology, kind: ClientKind, name: string): { holder: LockEngine; waiter: LockEngine } {
  const keyPrefix = uniquePrefix(`slow-sub-${name}`);
  const direct =
    topology === 'one server' ? makers[kind].topology(server.redis.url) : makers[kind].topology(nodes.where());
  let proxied: Pick<LockEngineOptions, 'redis' | 'client'>;
  if (topology === 'one server') {
    proxied = makers[kind].topology(single.url);
  } else {
    const through = clusterThroughProxies(kind, nodes.cluster.startupNodes, masters);
    closers.push(through.close);
    proxied = through.topology;
  }
  const holder = new LockEngine({ ...direct, keyPrefix, instanceId: 'holder' } as LockEngineOptions);
  const waiter = new LockEngine({ ...proxied, keyPrefix, instanceId: 'waiter' } as LockEngineOptions);
  engines.push(holder, waiter);
  return { holder, waiter };
}

function proxiesOf(topology: Topology): FaultProxy[] {
  return topology === 'one server' ? [single] : masters;
}

function subscribesDelivered(topology: Topology): number {
  return proxiesOf(topology).reduce((n, p) => n + p.subscribesDelivered, 0);
}

/** Resolves once the waiter has sent its next subscribe command, to whichever master. */
function nextSubscribeSeen(topology: Topology): Promise<void> {
  return Promise.race(proxiesOf(topology).map((p) => p.nextSubscribeSeen()));
}

/** One kind of wait on a key: how the holder takes it, how the waiter asks, and what the waiter may leave. */
interface Wait {
  readonly name: string;
  hold(engine: LockEngine, key: string): Promise<LockHandle>;
  ask(engine: LockEngine, key: string, waitMs: number): Promise<LockHandle>;
  /** What of the waiter's is in Redis for `key`: each entry names a leftover. */
  leftovers(client: Redis | Cluster, prefix: string, key: string): Promise<string[]>;
}

const LONG_LEASE = { leaseMs: 60_000 };

const WAITS: readonly Wait[] = [
  {
    name: 'a mutex',
    hold: (e, key) => e.acquire(key, LONG_LEASE),
    ask: (e, key, waitMs) => e.acquire(key, { waitMs }),
    leftovers: mutexLeftovers,
  },
  {
    name: 'a fair mutex (queued from its first attempt)',
    hold: (e, key) => e.acquire(key, LONG_LEASE),
    ask: (e, key, waitMs) => e.acquire(key, { waitMs, fair: true }),
    leftovers: mutexLeftovers,
  },
  {
    name: 'a write lock (a waiting writer keeps a place)',
    hold: (e, key) => e.acquireWrite(key, LONG_LEASE),
    ask: (e, key, waitMs) => e.acquireWrite(key, { waitMs }),
    async leftovers(client, prefix, key) {
      const base = `${prefix}{${key}}:rw`;
      const out: string[] = [];
      if ((await client.zcard(`${base}:writers`)) > 0) out.push('a waiting writer');
      if ((await client.hget(base, 'wi')) !== 'holder') out.push('the write lock is not the holder’s');
      return out;
    },
  },
  {
    name: 'a semaphore permit',
    hold: (e, key) => e.semaphore(key, { limit: 1 }).acquire(LONG_LEASE),
    ask: (e, key, waitMs) => e.semaphore(key, { limit: 1 }).acquire({ waitMs }),
    async leftovers(client, prefix, key) {
      const base = `${prefix}{${key}}:sem`;
      const records = Object.entries(await client.hgetall(`${base}:permits`)).filter(([f]) => f !== '#used');
      const out = records.filter(([, record]) => !record.endsWith('|holder')).map(([, r]) => `a permit ${r}`);
      if ((await client.zcard(`${base}:holders`)) !== 1) out.push('holders other than the holder’s one');
      return out;
    },
  },
];

async function mutexLeftovers(client: Redis | Cluster, prefix: string, key: string): Promise<string[]> {
  const base = `${prefix}{${key}}`;
  const out: string[] = [];
  if ((await client.zcard(`${base}:queue`)) > 0) out.push('a queued place');
  if ((await client.hlen(`${base}:waiters`)) > 0) out.push('a waiter record');
  const value = (await client.get(base)) ?? '';
  if (!/\|holder(\|w)?$/.test(value)) out.push(`the lock is not the holder’s: ${value}`);
  return out;
}

describe.each<Topology>(['one server', 'Cluster'])('on %s', (topology) => {
  describe.each(CLIENT_KINDS)('through %s, the subscriber delayed', (kind) => {
    it.each(WAITS.map((w) => [w.name, w] as const))(
      '%s: a 30 ms wait on a busy lock is a LockTimeoutError, settled while its subscribe is still held back, leaving nothing',
      async (_name, wait) => {
        const { holder, waiter } = pair(topology, kind, 'timeout');
        const prefix = holder.options.keyPrefix;
        const held = await wait.hold(holder, 'busy');
        for (const p of proxiesOf(topology)) p.delaySubscribers(500);
        const before = subscribesDelivered(topology);

        const err = await wait.ask(waiter, 'busy', 30).then(
          () => new Error('the waiter got a lock that is held'),
          (e: unknown) => e,
        );

        // The budget ended the wait, not the subscribe: it is still held back at the proxy
        // (the 30 ms timer is due long before the proxy's 500 ms one, in this same process).
        expect(subscribesDelivered(topology)).toBe(before);
        expect(err).toBeInstanceOf(LockTimeoutError);
        // A macrotask later the withdrawal, if any, was written on the waiter's connection; an
        // inspect sent on it now is answered after Redis ran it.
        await new Promise((resolve) => setImmediate(resolve));
        await waiter.inspect('busy').catch(() => undefined);
        const client = topology === 'one server' ? server.admin : nodes.admin;
        expect(await wait.leftovers(client, prefix, 'busy')).toEqual([]);
        expect(await held.release()).toBe(true);
      },
      30_000,
    );

    it.each(WAITS.map((w) => [w.name, w] as const))(
      '%s: a release made before the waiter’s subscription lands is not lost: the waiter takes the lock',
      async (_name, wait) => {
        const { holder, waiter } = pair(topology, kind, 'late');
        const held = await wait.hold(holder, 'late');
        // Held back until pass(): the subscription lands only after the release.
        for (const p of proxiesOf(topology)) p.delaySubscribers(Infinity);
        const subscribing = nextSubscribeSeen(topology);
        const before = subscribesDelivered(topology);
        // The holder's lease is a minute: only a retry after the subscription lands, or a
        // release message, gets the waiter the lock within this budget.
        const got = wait.ask(waiter, 'late', 20_000);
        await subscribing;

        expect(await held.release()).toBe(true);
        expect(subscribesDelivered(topology)).toBe(before);
        for (const p of proxiesOf(topology)) p.pass();

        const lock = await got;
        expect(lock.isHeld()).toBe(true);
        expect(await lock.release()).toBe(true);
      },
      30_000,
    );
  });
});
