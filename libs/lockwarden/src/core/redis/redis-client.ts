import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { ownRequire } from '../own-require';
import type { RedisConnection } from './connection';
import { IoRedisConnection } from './ioredis-connection';
import { NodeRedisConnection } from './node-redis-connection';
import { isGlide, isIoRedis, isRedisClient } from './client-kind';
import { GlideConnection } from './glide-connection';
import type { AnyGlideClient } from './glide-connection';
import { GivenConnection } from './given-connection';
import type { LockLogger } from '../observe/logger';
import type { AnyNodeRedis } from './node-redis-types';

/**
 * A Redis Cluster Lockwarden connects to (and closes) itself.
 *
 * @example
 * ```ts
 * LockModule.forRoot({ redis: { cluster: [{ host: '10.0.0.1', port: 7000 }], clusterOptions: { scaleReads: 'master' } } });
 * ```
 */
export interface ClusterSpec {
  cluster: ClusterNode[];
  clusterOptions?: ClusterOptions;
}

/** Where Lockwarden connects to Redis itself (with ioredis): a URL, ioredis options (Sentinel included), or cluster nodes. */
export type RedisTarget = string | RedisOptions | ClusterSpec;

/**
 * A client the application made, connected, and closes: ioredis (`Redis`, `Cluster`),
 * node-redis (`createClient()`, `createCluster()`, `createSentinel()`, `redis` 5 or 6), or a
 * Valkey GLIDE `GlideClient` or `GlideClusterClient` (see docs/topologies.md).
 *
 * @example
 * ```ts
 * import { createClient } from 'redis';
 * const client = await createClient({ url: process.env.REDIS_URL }).on('error', console.error).connect();
 * LockModule.forRoot({ client });
 * ```
 */
export type RedisClient = Redis | Cluster | AnyNodeRedis | AnyGlideClient;

/** Where to find Redis: where to connect (RedisTarget), or a client the caller owns and closes. */
export type RedisSpec = RedisTarget | RedisClient;

/** A connection together with whether Lockwarden created the client (and so reports its outages). */
export interface ConnectionLease {
  connection: RedisConnection;
  owned: boolean;
}

/**
 * Clients we create fail commands after a few reconnection attempts rather
 * than queueing them for minutes, so a dead Redis surfaces as LockBackendError
 * within a lock's wait budget, and reconnect within half a second of Redis
 * coming back. `disconnectTimeout: 0`: closing a client whose
 * socket is already gone must not leave ioredis's 2 s destroy timer keeping
 * the process alive.
 */
export const OWNED_DEFAULTS: RedisOptions = {
  maxRetriesPerRequest: 2,
  connectTimeout: 5_000,
  disconnectTimeout: 0,
  // ioredis backs off to 2 s between reconnects; locks want to be usable again soon after Redis is.
  retryStrategy: (times: number) => Math.min(times * 50, 500),
};

const wrapped = new WeakMap<object, RedisConnection>();

/** The connection for a client, one per client object (an engine and the CLI share it). */
export function connectionOf(client: RedisClient): RedisConnection {
  let connection = wrapped.get(client);
  if (!connection) {
    connection = isIoRedis(client)
      ? new IoRedisConnection(client)
      : isGlide(client)
        ? new GlideConnection(client)
        : new NodeRedisConnection(client);
    wrapped.set(client, connection);
  }
  return connection;
}

/**
 * The connection for a spec: the application's client (with a stand-in of our own for when
 * it is closed: GivenConnection), or an ioredis client of our own. ioredis is loaded here,
 * only when Lockwarden connects by itself, so an application that brings node-redis never
 * loads it.
 */
export function openConnection(spec: RedisSpec, logger: LockLogger): ConnectionLease {
  if (isRedisClient(spec)) return { connection: new GivenConnection(connectionOf(spec), logger), owned: false };
  const io = ownRequire()('ioredis') as typeof import('ioredis');
  // The spec was checked with the engine's options (checkRedisSpec).
  let client: Redis | Cluster;
  if (typeof spec === 'string') client = new io.Redis(spec, OWNED_DEFAULTS);
  else if ('cluster' in spec) {
    const options = spec.clusterOptions ?? {};
    client = new io.Cluster(spec.cluster, {
      ...options,
      redisOptions: { ...OWNED_DEFAULTS, ...options.redisOptions },
    });
  } else client = new io.Redis({ ...OWNED_DEFAULTS, ...spec });
  return { connection: connectionOf(client), owned: true };
}

/** Redlock's nodes, checked. */
export interface ResolvedQuorum {
  nodes: RedisSpec[];
  nodeTimeoutMs: number;
}
