import { GlideClusterClient, Logger } from '@valkey/valkey-glide';
import { LockEngine, type LockEngineOptions } from 'lockwarden/core';
import { LockLostError } from 'lockwarden/errors';
import { Redis } from 'ioredis';
import { EventLog } from '../harness/event-log';
import { FaultProxy } from '../harness/fault-proxy';
import { checkHistory, type Section } from '../harness/history';
import { clusterForFile, RedisCluster } from '../harness/redis-cluster';
import { uniquePrefix, valkey9 } from '../harness/redis';
import { cells, describeCells, glideSuiteServer } from '../harness/cells';
import { closeNow } from '../harness/engines';
import { CLIENT_KINDS, clusterThroughProxies } from '../harness/clients';
import type { AnyClientKind, ClientKind } from '../harness/clients';

/**
 * Faults on a 3-master Cluster, through each client: one fault proxy in front of every
 * master, and the client told to reach each master through its proxy (ioredis's `natMap`,
 * node-redis's `nodeAddressMap`), so a fault cuts the whole Cluster off from one engine.
 * Valkey GLIDE has no address map: for it a second Cluster announces the proxies' ports as
 * its nodes' own (as nodes behind NAT do), and the engine on the healthy side maps them back.
 */
type Topology = Pick<LockEngineOptions, 'redis' | 'client'>;

/** One Cluster with a proxy in front of each master, and how each side of a fault reaches it. */
interface Setup {
  proxies: FaultProxy[];
  /** An engine's topology whose every connection runs through the proxies. */
  throughProxies(kind: AnyClientKind): Promise<Topology>;
  /** An engine's topology that reaches the masters directly. */
  direct(): Topology;
  /** The servers' clock, in µs (one machine: any master's). */
  serverTime(): Promise<number>;
}

const nodes = clusterForFile({ masters: 3 });
let proxies: FaultProxy[];
const engines: LockEngine[] = [];
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  proxies = await Promise.all(nodes.cluster.startupNodes.map((node) => FaultProxy.start(node)));
  nodes.atEnd(() => Promise.all(proxies.map((p) => p.stop())));
});

afterEach(async () => {
  for (const p of [...proxies, ...[...announced.values()].flatMap((a) => a.proxies)]) p.pass();
  await Promise.all(engines.splice(0).map(closeNow));
  await Promise.all(closers.splice(0).map((close) => close()));
});

function engine(topology: Topology, options: Partial<LockEngineOptions>, events?: EventLog): LockEngine {
  const e = new LockEngine({ ...topology, onEvent: events?.listener, ...options } as LockEngineOptions);
  engines.push(e);
  return e;
}

/** The first Cluster, reached through the proxies by an address map (ioredis, node-redis). */
const mapped: Setup = {
  get proxies() {
    return proxies;
  },
  async throughProxies(kind) {
    const { topology, close } = clusterThroughProxies(kind as ClientKind, nodes.cluster.startupNodes, proxies);
    closers.push(close);
    return topology;
  },
  direct: () => ({ redis: nodes.where() }),
  async serverTime() {
    const [s, us] = await nodes.admin.time();
    return Number(s) * 1e6 + Number(us);
  },
};

/** The Clusters whose nodes announce their proxies' ports (GLIDE), made on first use, by server binary. */
const announced = new Map<string, Setup & { stop(): Promise<void> }>();

async function announcedCluster(binary?: string): Promise<Setup> {
  const made = announced.get(binary ?? 'redis');
  if (made) return made;
  const c = await RedisCluster.start({ masters: 3, binary });
  const ps = await Promise.all(c.startupNodes.map((node) => FaultProxy.start(node)));
  await c.announce(ps.map((p) => p.port));
  // The healthy side is told the announced addresses, and maps them back to the nodes.
  const natMap = Object.fromEntries(
    c.startupNodes.map((node, i) => [`${ps[i].host}:${ps[i].port}`, { host: node.host, port: node.port }]),
  );
  const time = new Redis(c.nodes[0].port, c.nodes[0].host);
  const setup = {
    proxies: ps,
    async throughProxies() {
      // Its reconnection warnings are what the faults cause on purpose.
      Logger.setLoggerConfig('error');
      // GLIDE fails a command after 250 ms by default: a longer budget leaves the timing to Lockwarden.
      const client = await GlideClusterClient.createClient({
        addresses: ps.map((p) => ({ host: p.host, port: p.port })),
        requestTimeout: 10_000,
      });
      closers.push(async () => client.close());
      return { client };
    },
    direct: () => ({ redis: { cluster: c.startupNodes, clusterOptions: { natMap } } }),
    async serverTime() {
      const [s, us] = await time.time();
      return Number(s) * 1e6 + Number(us);
    },
    async stop() {
      time.disconnect();
      await Promise.all(ps.map((p) => p.stop()));
      await c.stop();
    },
  };
  announced.set(binary ?? 'redis', setup);
  return setup;
}

afterAll(async () => {
  for (const setup of announced.values()) await setup.stop();
});

const KINDS: [string, AnyClientKind, () => Promise<Setup>][] = [
  ...CLIENT_KINDS.map((kind): [string, AnyClientKind, () => Promise<Setup>] => [kind, kind, async () => mapped]),
  ['glide', 'glide', () => announcedCluster()],
  // Valkey 9 where it was built (tools/valkey9.sh): its releases take each master's own DELIFEQ.
  ...(valkey9
    ? [
        ['glide, on Valkey 9', 'glide', () => announcedCluster(valkey9)] as [
          string,
          AnyClientKind,
          () => Promise<Setup>,
        ],
      ]
    : []),
];

/** npm test's cells: ioredis (an address map) and GLIDE (announced addresses), on Valkey 9 where it is built. */
const inSuite = ([name]: (typeof KINDS)[number]): boolean =>
  name === 'ioredis' || name === (glideSuiteServer(valkey9) === 'valkey9' ? 'glide, on Valkey 9' : 'glide');

describeCells(
  cells(KINDS, inSuite),
  (name) => `on a Cluster, through ${name}`,
  (_name, kind, setup) => {
    let on: Setup;
    beforeAll(async () => {
      on = await setup();
    }, 60_000);

    it('aborts a holder cut off by a partition before its lease can end; the next holder never overlaps it', async () => {
      const keyPrefix = uniquePrefix(`cl-partition-${kind}`);
      // A lease short enough to end well within the next holder's wait, and long enough that a
      // stall of this process on a loaded machine does not end it before the test reads its token.
      const cutOff = engine(await on.throughProxies(kind), { keyPrefix, leaseMs: 3_000 });
      const healthy = engine(on.direct(), { keyPrefix });
      const first = await cutOff.acquire('p');
      // Listened for at once: an abort while the test still reads would otherwise go unrecorded.
      let abortedAt = Infinity;
      first.signal.addEventListener('abort', () => (abortedAt = performance.now()));
      const firstToken = await first.fencingToken();
      const firstEntry = await on.serverTime();

      for (const p of on.proxies) p.blackhole();
      const next = await healthy.acquire('p', { waitMs: 10_000 });
      const grantedAt = performance.now();
      const nextEntry = await on.serverTime();

      expect(first.signal.reason).toBeInstanceOf(LockLostError);
      expect(abortedAt).toBeLessThan(grantedAt);
      const sections: Section[] = [
        { key: 'p', token: firstToken, entry: firstEntry, exit: firstEntry, aborted: true },
        { key: 'p', token: await next.fencingToken(), entry: nextEntry, exit: await on.serverTime(), aborted: false },
      ];
      await next.release();
      expect(checkHistory(sections)).toEqual([]);
      expect(sections[1].token).toBeGreaterThan(firstToken);
      await expect(first.fencingToken()).rejects.toBeInstanceOf(LockLostError);
    });

    it('retries renewal within the lease over new connections after every one was reset, and keeps the lock', async () => {
      const events = new EventLog();
      const e = engine(
        await on.throughProxies(kind),
        { keyPrefix: uniquePrefix(`cl-reset-${kind}`), leaseMs: 6_000 },
        events,
      );
      const lock = await e.acquire('kept');
      // The engine's connections run through the proxies, so the reset reaches them.
      expect(on.proxies.reduce((n, p) => n + p.connections, 0)).toBeGreaterThan(0);
      for (const p of on.proxies) p.reset();
      expect(on.proxies.reduce((n, p) => n + p.connections, 0)).toBe(0);
      for (const p of on.proxies) p.pass();
      await events.renewals('kept', 2);
      expect(lock.isHeld()).toBe(true);
      expect(lock.signal.aborted).toBe(false);
      expect(await lock.release()).toBe(true);
    });

    it('a waiter on the far side of a partition is told nothing false: it gets the lock only once it is free', async () => {
      const keyPrefix = uniquePrefix(`cl-waiter-${kind}`);
      const holder = engine(on.direct(), { keyPrefix });
      const waiterSide = engine(await on.throughProxies(kind), { keyPrefix });
      const held = await holder.acquire('w');
      const heldToken = await held.fencingToken();
      const waiting = waiterSide.acquire('w', { waitMs: 10_000 });
      for (const p of on.proxies) p.blackhole();
      await held.release();
      for (const p of on.proxies) p.pass();
      // Heard or not (the release message may have been lost in the partition), the waiter
      // takes the lock within its wait, and only after the holder gave it back.
      const got = await waiting;
      expect(await got.fencingToken()).toBeGreaterThan(heldToken);
      expect(got.signal.aborted).toBe(false);
      await got.release();
    });
  },
);
