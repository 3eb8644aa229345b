// How a worker process reaches Redis: REDIS=<url> for one server, CLUSTER=host:port,... for a
// cluster, QUORUM=<url>,<url>,... for Redlock across independent masters. CLIENT=node-redis
// gives the engine a node-redis client the worker made (one server or Cluster), CLIENT=glide a
// Valkey GLIDE client (GlideClient, or GlideClusterClient on a Cluster), instead of letting
// Lockwarden connect with ioredis.
import type { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import { Cluster, Redis } from 'ioredis';
import type { LockEngineOptions } from '../../libs/lockwarden/src/core/options/engine-options';
import type { RedisTarget } from '../../libs/lockwarden/src/core/redis/redis-client';
import { adminOptions, redisScheme } from '../harness/tls';
import { glideTls, ioredisTarget, nodeRedisTls } from '../harness/tls-clients';

function clusterNodes(): { host: string; port: number }[] | undefined {
  return process.env.CLUSTER?.split(',').map((hp) => {
    const [host, port] = hp.split(':');
    return { host, port: Number(port) };
  });
}

function quorumNodes(): string[] | undefined {
  return process.env.QUORUM?.split(',');
}

export function lockRedis(): RedisTarget {
  const nodes = clusterNodes();
  // Over TLS (the TLS matrix leg), with the test CA in Lockwarden's own options.
  return ioredisTarget(nodes ? { cluster: nodes } : process.env.REDIS!);
}

/** The node-redis client lockTopology made, if any: the worker closes it after its engine. */
let made: { destroy(): unknown; isOpen: boolean } | undefined;
/** The GLIDE client lockTopology made, if any. */
let glide: GlideClient | GlideClusterClient | undefined;

/**
 * GLIDE fails a command after 250 ms unless told otherwise, well before the engine's own
 * budget (commandTimeoutMs, 2 s by default). As docs/topologies.md advises, the workers give
 * GLIDE that budget, so a loaded test machine is judged by Lockwarden's timing, as with the
 * other clients.
 */
const GLIDE_REQUEST_TIMEOUT_MS = 2_000;

/** The engine's topology options, whichever of the three the environment names. */
export async function lockTopology(): Promise<Pick<LockEngineOptions, 'redis' | 'quorum' | 'client'>> {
  const quorum = quorumNodes();
  // A node slower than the timeout counts as down, and a worker among many on a loaded machine
  // can be slower than the default 500 ms. The history check is about overlaps; quorum.spec.ts
  // tests the node timeout.
  if (quorum) return { quorum: { nodes: quorum, nodeTimeoutMs: 3_000 } };
  // GLIDE and node-redis are loaded only by a worker that uses them: a few hundred ms of CPU
  // each, in every worker process of the suite.
  if (process.env.CLIENT === 'glide') {
    const { GlideClient, GlideClusterClient } = await import('@valkey/valkey-glide');
    const nodes = clusterNodes();
    if (nodes) {
      glide = await GlideClusterClient.createClient({
        addresses: nodes,
        requestTimeout: GLIDE_REQUEST_TIMEOUT_MS,
        ...glideTls(),
      });
      return { client: glide };
    }
    const url = new URL(process.env.REDIS!);
    glide = await GlideClient.createClient({
      addresses: [{ host: url.hostname, port: Number(url.port) }],
      requestTimeout: GLIDE_REQUEST_TIMEOUT_MS,
      ...glideTls(),
    });
    return { client: glide };
  }
  if (process.env.CLIENT !== 'node-redis') return { redis: lockRedis() };
  const { createClient, createCluster } = await import('redis');
  const nodes = clusterNodes();
  const client = nodes
    ? createCluster({
        rootNodes: nodes.map((n) => ({ url: `${redisScheme}://${n.host}:${n.port}` })),
        ...(nodeRedisTls() && { defaults: nodeRedisTls() }),
      })
    : createClient({ url: process.env.REDIS!, ...nodeRedisTls() });
  client.on('error', () => undefined);
  await client.connect();
  made = client;
  return { client };
}

/** Closes the node-redis client lockTopology made (after the engine closed). */
export async function closeTopology(): Promise<void> {
  if (made?.isOpen) await made.destroy();
  glide?.close();
}

/** A client for data and server time: the cluster, the first quorum node, or the one server. */
export function dataClient(): Redis | Cluster {
  const nodes = clusterNodes();
  if (nodes) return new Cluster(nodes, { redisOptions: adminOptions() });
  return new Redis(quorumNodes()?.[0] ?? process.env.REDIS!, adminOptions());
}

/**
 * One server's clock, for timestamps compared across processes: the first cluster node, the
 * first quorum node, or the one server. A Cluster client sends TIME to any node, and two
 * nodes' readings are not ordered (each may answer with the time its event loop last cached),
 * so a section read on two nodes could seem to end before it began.
 */
export function clockClient(): Redis {
  const first = clusterNodes()?.[0];
  if (first) return new Redis(first.port, first.host, adminOptions());
  return new Redis(quorumNodes()?.[0] ?? process.env.REDIS!, adminOptions());
}
