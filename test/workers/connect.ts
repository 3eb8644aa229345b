// How a worker process reaches Redis: REDIS=<url> for one server, CLUSTER=host:port,... for a
// cluster, QUORUM=<url>,<url>,... for Redlock across independent masters.
import { Cluster, Redis } from 'ioredis';
import type { LockEngineOptions } from '../../libs/lockwarden/src/core/options/engine-options';
import type { RedisTarget } from '../../libs/lockwarden/src/core/redis/redis-client';

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
  return nodes ? { cluster: nodes } : process.env.REDIS!;
}

/** The engine's topology options, whichever of the three the environment names. */
export function lockTopology(): Pick<LockEngineOptions, 'redis' | 'quorum'> {
  const quorum = quorumNodes();
  return quorum ? { quorum: { nodes: quorum } } : { redis: lockRedis() };
}

/** A client for data and server time: the cluster, the first quorum node, or the one server. */
export function dataClient(): Redis | Cluster {
  const nodes = clusterNodes();
  if (nodes) return new Cluster(nodes);
  return new Redis(quorumNodes()?.[0] ?? process.env.REDIS!);
}
