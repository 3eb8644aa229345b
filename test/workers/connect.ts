// How a worker process reaches Redis: REDIS=<url> for one server, CLUSTER=host:port,... for a cluster.
import { Cluster, Redis } from 'ioredis';
import type { RedisSpec } from '../../libs/lockwarden/src/core/redis-client';

function clusterNodes(): { host: string; port: number }[] | undefined {
  return process.env.CLUSTER?.split(',').map((hp) => {
    const [host, port] = hp.split(':');
    return { host, port: Number(port) };
  });
}

export function lockRedis(): RedisSpec {
  const nodes = clusterNodes();
  return nodes ? { cluster: nodes } : process.env.REDIS!;
}

export function dataClient(): Redis | Cluster {
  const nodes = clusterNodes();
  return nodes ? new Cluster(nodes) : new Redis(process.env.REDIS!);
}
