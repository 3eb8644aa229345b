import { Cluster } from 'ioredis';
import { createClient, createCluster } from 'redis';
import type { LockEngineOptions } from '../../libs/lockwarden/src/core/options/engine-options';

/**
 * Which Redis client the engine is given: ioredis (made by Lockwarden from a URL, the
 * default), or a node-redis client the test makes and passes as `client`, as an application
 * that already has one would.
 */
export type ClientKind = 'ioredis' | 'node-redis';

/** Both clients, for `describe.each`. */
export const CLIENT_KINDS: readonly ClientKind[] = ['ioredis', 'node-redis'];

/** Where a Redis is: one server's URL, or a Cluster's startup nodes. */
export type Where = string | { cluster: { host: string; port: number }[] };

interface Closable {
  readonly isOpen: boolean;
  destroy(): unknown;
}

/**
 * Makes the topology options for engines on `kind`, and closes the node-redis clients it made
 * (after the engines that used them: call `closeClients()` once they are closed). Each call
 * makes a new client, so two engines are two connections, as two processes would be.
 */
export function clientMaker(kind: ClientKind): {
  topology(where: Where): Pick<LockEngineOptions, 'redis' | 'client'>;
  closeClients(): Promise<void>;
} {
  const made: Closable[] = [];
  return {
    topology(where) {
      if (kind === 'ioredis') return { redis: where };
      if (typeof where === 'string') {
        const client = createClient({ url: where });
        // An application listens to its client's errors; node-redis throws them otherwise.
        client.on('error', () => undefined);
        client.connect().catch(() => undefined);
        made.push(client);
        return { client };
      }
      const cluster = createCluster({ rootNodes: where.cluster.map((n) => ({ url: `redis://${n.host}:${n.port}` })) });
      cluster.on('error', () => undefined);
      cluster.connect().catch(() => undefined);
      made.push(cluster);
      return { client: cluster };
    },
    async closeClients() {
      for (const client of made.splice(0)) if (client.isOpen) await client.destroy();
    },
  };
}

/**
 * A Cluster reached through one fault proxy per master (`proxies[i]` in front of `nodes[i]`):
 * the client is told to reach each master through its proxy (ioredis's `natMap`, node-redis's
 * `nodeAddressMap`), so a fault cuts the whole Cluster off from this client alone. `close`
 * closes the client, after the engines that used it.
 */
export function clusterThroughProxies(
  kind: ClientKind,
  nodes: readonly { host: string; port: number }[],
  proxies: readonly { host: string; port: number }[],
): { topology: Pick<LockEngineOptions, 'client'>; close(): Promise<unknown> } {
  // Plain objects: the client copies what it is given, and a getter (FaultProxy.host) is lost in the copy.
  const map = Object.fromEntries(
    nodes.map((node, i) => [`${node.host}:${node.port}`, { host: proxies[i].host, port: proxies[i].port }]),
  );
  const roots = proxies.map((p) => ({ host: p.host, port: p.port }));
  if (kind === 'ioredis') {
    const client = new Cluster(roots, { natMap: map, redisOptions: { maxRetriesPerRequest: 2 } });
    client.on('error', () => undefined);
    return { topology: { client }, close: async () => client.disconnect() };
  }
  const client = createCluster({
    rootNodes: roots.map((r) => ({ url: `redis://${r.host}:${r.port}` })),
    nodeAddressMap: map,
  });
  client.on('error', () => undefined);
  client.connect().catch(() => undefined);
  return { topology: { client }, close: async () => client.isOpen && client.destroy() };
}
