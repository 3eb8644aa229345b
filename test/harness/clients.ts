import { GlideClient, Logger } from '@valkey/valkey-glide';
import { Cluster } from 'ioredis';
import { createClient, createCluster } from 'redis';
import type { LockEngineOptions } from '../../libs/lockwarden/src/core/options/engine-options';
import { glideTls, ioredisTarget, nodeRedisTls } from './tls-clients';
import { redisScheme } from './tls';

/**
 * Which Redis client the engine is given: ioredis (made by Lockwarden from a URL, the
 * default), or a node-redis client the test makes and passes as `client`, as an application
 * that already has one would.
 */
export type ClientKind = 'ioredis' | 'node-redis';

/** Both clients, for `describe.each`. */
export const CLIENT_KINDS: readonly ClientKind[] = ['ioredis', 'node-redis'];

/** The two above, or a Valkey GLIDE client, which connects before it can be given (`connect()` alone). */
export type AnyClientKind = ClientKind | 'glide';

/** Where a Redis is: one server's URL, or a Cluster's startup nodes. */
export type Where = string | { cluster: { host: string; port: number }[] };

interface Closable {
  readonly isOpen: boolean;
  destroy(): unknown;
}

type Topology = Pick<LockEngineOptions, 'redis' | 'client'>;

/**
 * Makes the topology options for engines on `kind`, and closes the node-redis clients it made
 * (after the engines that used them: call `closeClients()` once they are closed). Each call
 * makes a new client, so two engines are two connections, as two processes would be.
 */
export function clientMaker(kind: AnyClientKind): {
  topology(where: Where): Topology;
  /** `topology`, for every kind: a GLIDE client (one server) is connected first. */
  connect(where: Where): Promise<Topology>;
  closeClients(): Promise<void>;
} {
  const made: Closable[] = [];
  const glides: GlideClient[] = [];
  const topology = (where: Where): Topology => {
    if (kind === 'glide') throw new Error('a GLIDE client connects before it is given: use connect()');
    // Over TLS (the TLS matrix leg) each client is given the test CA in its own options.
    if (kind === 'ioredis') return { redis: ioredisTarget(where) };
    if (typeof where === 'string') {
      const client = createClient({ url: where, ...nodeRedisTls() });
      // An application listens to its client's errors; node-redis throws them otherwise.
      client.on('error', () => undefined);
      client.connect().catch(() => undefined);
      made.push(client);
      return { client };
    }
    const cluster = createCluster({
      rootNodes: where.cluster.map((n) => ({ url: `${redisScheme}://${n.host}:${n.port}` })),
      ...(nodeRedisTls() && { defaults: nodeRedisTls() }),
    });
    cluster.on('error', () => undefined);
    cluster.connect().catch(() => undefined);
    made.push(cluster);
    return { client: cluster };
  };
  return {
    topology,
    async connect(where) {
      if (kind !== 'glide') return topology(where);
      if (typeof where !== 'string') throw new Error('GLIDE cluster clients are made by the Cluster tests themselves');
      const url = new URL(where);
      // Its reconnection warnings are what fault tests cause on purpose.
      Logger.setLoggerConfig('error');
      // GLIDE fails a command that took 250 ms by default; a longer budget leaves the timing to
      // Lockwarden (commandTimeoutMs, waitMs), as with the other clients, and lets a test wait
      // for a late reply.
      const client = await GlideClient.createClient({
        addresses: [{ host: url.hostname, port: Number(url.port) }],
        requestTimeout: 10_000,
        ...glideTls(),
      });
      glides.push(client);
      return { client };
    },
    async closeClients() {
      for (const client of made.splice(0)) if (client.isOpen) await client.destroy();
      for (const client of glides.splice(0)) client.close();
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
