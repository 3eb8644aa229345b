import { LeadershipRegistry, LockEngine } from 'lockwarden/core';
import type { LeaderChange, Leadership } from 'lockwarden/core';
import { clusterForFile } from '../harness/redis-cluster';
import { uniquePrefix } from '../harness/redis';

/** Leader election on a 3-master Redis Cluster: one slot per leadership, sharded pub/sub for observers. */
const nodes = clusterForFile({ masters: 3 });
const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function leadership(prefix: string, instanceId: string): Leadership {
  const engine = new LockEngine({
    redis: { cluster: nodes.cluster.startupNodes },
    keyPrefix: prefix,
    instanceId,
    metrics: false,
  });
  const registry = new LeadershipRegistry(engine);
  cleanups.push(async () => {
    await registry.close();
    await engine.close();
  });
  return registry.leadership('jobs');
}

it('elects, hands off and announces terms on a cluster, with every key in the lock slot', async () => {
  const prefix = uniquePrefix('lead-cluster');
  const [a, b, observer] = ['a', 'b', 'o'].map((id) => leadership(prefix, id));
  const seen: LeaderChange[] = [];
  const stop = new AbortController();
  let wake: (() => void) | undefined;
  const watching = (async () => {
    for await (const change of observer.changes({ signal: stop.signal })) {
      seen.push(change);
      wake?.();
    }
  })();
  cleanups.push(async () => {
    stop.abort();
    await watching;
  });
  const count = async (n: number): Promise<LeaderChange[]> => {
    while (seen.length < n) await new Promise<void>((resolve) => (wake = resolve));
    return seen;
  };

  await a.campaign();
  await count(1);
  const campaignB = b.campaign();
  await a.resign();
  await campaignB;
  expect(await observer.leader()).toEqual(b.currentTerm);
  await b.resign();
  const changes = await count(4);
  expect(changes.map((c) => `${c.type} ${c.term.instanceId}`)).toEqual([
    'elected a',
    'ended a',
    'elected b',
    'ended b',
  ]);
  expect(changes[2].term.fencingToken).toBeGreaterThan(changes[0].term.fencingToken);

  const lock = `${prefix}{leader:jobs}`;
  const slots = await Promise.all(
    [lock, `${lock}:term`, `${lock}:terms`, `${lock}:elections`].map((k) => nodes.admin.cluster('KEYSLOT', k)),
  );
  expect(new Set(slots).size).toBe(1);
});
