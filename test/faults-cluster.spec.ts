import { LockEngine, LockLostError, type LockEngineOptions } from 'lockwarden';
import type { Cluster } from 'ioredis';
import { EventLog } from './harness/event-log';
import { FaultProxy } from './harness/fault-proxy';
import { checkHistory, type Section } from './harness/history';
import { RedisCluster } from './harness/redis-cluster';
import { uniquePrefix } from './harness/redis';
import { closeNow } from './harness/engines';
import { CLIENT_KINDS, clusterThroughProxies } from './harness/clients';
import type { ClientKind } from './harness/clients';

/**
 * Faults on a 3-master Cluster, through each client: one fault proxy in front of every
 * master, and the client told to reach each master through its proxy (ioredis's `natMap`,
 * node-redis's `nodeAddressMap`), so a fault cuts the whole Cluster off from one engine.
 */
let cluster: RedisCluster;
let proxies: FaultProxy[];
const engines: LockEngine[] = [];
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  cluster = await RedisCluster.start({ masters: 3 });
  proxies = await Promise.all(cluster.startupNodes.map((node) => FaultProxy.start(node)));
}, 60_000);

afterEach(async () => {
  for (const p of proxies) p.pass();
  await Promise.all(engines.splice(0).map(closeNow));
  await Promise.all(closers.splice(0).map((close) => close()));
});

afterAll(async () => {
  await Promise.all(proxies.map((p) => p.stop()));
  await cluster.stop();
});

/** The Cluster through the proxies, with `kind`. */
function throughProxies(kind: ClientKind): Pick<LockEngineOptions, 'redis' | 'client'> {
  const { topology, close } = clusterThroughProxies(kind, cluster.startupNodes, proxies);
  closers.push(close);
  return topology;
}

function engine(
  topology: Pick<LockEngineOptions, 'redis' | 'client'>,
  options: Partial<LockEngineOptions>,
  events?: EventLog,
): LockEngine {
  const e = new LockEngine({ ...topology, onEvent: events?.listener, ...options } as LockEngineOptions);
  engines.push(e);
  return e;
}

async function serverTime(): Promise<number> {
  const [s, us] = await admin().time();
  return Number(s) * 1e6 + Number(us);
}

let adminClient: Cluster | undefined;
function admin(): Cluster {
  if (!adminClient) {
    const client = cluster.client();
    adminClient = client;
    closers.push(async () => {
      adminClient = undefined;
      client.disconnect();
    });
  }
  return adminClient;
}

describe.each(CLIENT_KINDS)('on a Cluster, through %s', (kind) => {
  it('aborts a holder cut off by a partition before its lease can end; the next holder never overlaps it', async () => {
    const keyPrefix = uniquePrefix(`cl-partition-${kind}`);
    const cutOff = engine(throughProxies(kind), { keyPrefix, leaseMs: 1_500 });
    const healthy = engine({ redis: { cluster: cluster.startupNodes } }, { keyPrefix });
    const first = await cutOff.acquire('p');
    const firstToken = await first.fencingToken();
    const firstEntry = await serverTime();
    let abortedAt = Infinity;
    first.signal.addEventListener('abort', () => (abortedAt = performance.now()));

    for (const p of proxies) p.blackhole();
    const next = await healthy.acquire('p', { waitMs: 10_000 });
    const grantedAt = performance.now();
    const nextEntry = await serverTime();

    expect(first.signal.reason).toBeInstanceOf(LockLostError);
    expect(abortedAt).toBeLessThan(grantedAt);
    const sections: Section[] = [
      { key: 'p', token: firstToken, entry: firstEntry, exit: firstEntry, aborted: true },
      { key: 'p', token: await next.fencingToken(), entry: nextEntry, exit: await serverTime(), aborted: false },
    ];
    await next.release();
    expect(checkHistory(sections)).toEqual([]);
    expect(sections[1].token).toBeGreaterThan(firstToken);
    await expect(first.fencingToken()).rejects.toBeInstanceOf(LockLostError);
  });

  it('retries renewal within the lease over new connections after every one was reset, and keeps the lock', async () => {
    const events = new EventLog();
    const e = engine(throughProxies(kind), { keyPrefix: uniquePrefix(`cl-reset-${kind}`), leaseMs: 6_000 }, events);
    const lock = await e.acquire('kept');
    // The engine's connections run through the proxies, so the reset reaches them.
    expect(proxies.reduce((n, p) => n + p.connections, 0)).toBeGreaterThan(0);
    for (const p of proxies) p.reset();
    expect(proxies.reduce((n, p) => n + p.connections, 0)).toBe(0);
    for (const p of proxies) p.pass();
    await events.renewals('kept', 2);
    expect(lock.isHeld()).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    expect(await lock.release()).toBe(true);
  });

  it('a waiter on the far side of a partition is told nothing false: it gets the lock only once it is free', async () => {
    const keyPrefix = uniquePrefix(`cl-waiter-${kind}`);
    const holder = engine({ redis: { cluster: cluster.startupNodes } }, { keyPrefix });
    const waiterSide = engine(throughProxies(kind), { keyPrefix });
    const held = await holder.acquire('w');
    const heldToken = await held.fencingToken();
    const waiting = waiterSide.acquire('w', { waitMs: 10_000 });
    for (const p of proxies) p.blackhole();
    await held.release();
    for (const p of proxies) p.pass();
    // Heard or not (the release message may have been lost in the partition), the waiter
    // takes the lock within its wait, and only after the holder gave it back.
    const got = await waiting;
    expect(await got.fencingToken()).toBeGreaterThan(heldToken);
    expect(got.signal.aborted).toBe(false);
    await got.release();
  });
});
