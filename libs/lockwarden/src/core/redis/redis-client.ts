import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { ownRequire } from '../own-require';
import type { RedisConnection } from './connection';
import { IoRedisConnection } from './ioredis-connection';
import { NodeRedisConnection } from './node-redis-connection';
import { isGlide, isIoRedis, isRedisClient } from './client-kind';
import { GlideConnection } from './glide-connection';
import type { AnyGlideClient } from './glide-connection';
import { GivenConnection } from './given-connection';
import { guardedConnector } from './guarded-connector';
import type { LockLogger } from '../observe/logger';
import type { AnyNodeRedis } from './node-redis-types';

/**
 * A Redis Cluster Lockwarden connects to (and closes) itself. Over TLS, each node's connection
 * takes its settings from `clusterOptions.redisOptions.tls` (the CA of a private one as `ca`).
 *
 * @example
 * ```ts
 * LockModule.forRoot({ redis: { cluster: [{ host: '10.0.0.1', port: 7000 }], clusterOptions: { scaleReads: 'master' } } });
 * // over TLS, with a private CA:
 * LockModule.forRoot({
 *   redis: {
 *     cluster: [{ host: '10.0.0.1', port: 7000 }],
 *     clusterOptions: { redisOptions: { tls: { ca: readFileSync('/etc/redis/ca.crt') } } },
 *   },
 * });
 * ```
 */
export interface ClusterSpec {
  cluster: ClusterNode[];
  clusterOptions?: ClusterOptions;
}

/**
 * A redis:// or rediss:// URL with ioredis options beside it: the URL says where (host, port,
 * user, password, database), the options say how, e.g. `tls: { ca }` to trust a private CA.
 * Settings the URL already makes (host, port, path, Sentinel) are not given beside it.
 *
 * @example
 * ```ts
 * import { readFileSync } from 'node:fs';
 * LockModule.forRoot({
 *   redis: { url: 'rediss://lockwarden:secret@redis.internal:6380', tls: { ca: readFileSync('/etc/redis/ca.crt') } },
 * });
 * ```
 */
export interface RedisUrlSpec extends Omit<RedisOptions, 'host' | 'port' | 'path' | 'sentinels'> {
  /** `redis://[user:password@]host[:port][/db]`, or `rediss://…` for TLS. */
  url: string;
}

/**
 * Where Lockwarden connects to Redis itself (with ioredis): a URL, a URL with ioredis options
 * (RedisUrlSpec: TLS with a private CA), ioredis options (Sentinel included), or cluster nodes.
 */
export type RedisTarget = string | RedisUrlSpec | RedisOptions | ClusterSpec;

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
 * What the clients Lockwarden creates change in ioredis's defaults.
 *
 * `maxRetriesPerRequest: 2`: every third failed reconnection drops the calls waiting for the
 * connection, not every twenty-first. With the retry strategy below, a call sent while the
 * client reconnects is dropped within 1.5 s (0.15 s into an outage), not after about 8 s. An
 * acquire whose first attempt is dropped fails with LockBackendError then, or at its settle
 * bound if that comes first (wait/acquire-loop.ts). A dropped retry does not end a waiter that
 * Redis already told "busy". It backs off and tries again, and ends with LockTimeoutError when
 * its wait budget runs out, or with LockBackendError once the outage has lasted
 * `commandTimeoutMs` (wait/outage-sweep.ts). A silent Redis (a partition) drops no call: an
 * acquire then ends at its settle bound.
 *
 * The retry strategy reconnects within half a second of Redis coming back.
 * `disconnectTimeout: 0`: closing a client whose socket is already gone must not leave
 * ioredis's 2 s destroy timer keeping the process alive.
 */
export const OWNED_DEFAULTS: RedisOptions = {
  maxRetriesPerRequest: 2,
  connectTimeout: 5_000,
  disconnectTimeout: 0,
  // No INFO before "ready": an ACL user without INFO (the least privilege docs/configuration.md
  // gives) would make ioredis print "Skipping the ready check" at every connect. Nothing of ours
  // needs it: a server still loading its data answers LOADING, which is no refusal
  // (errors/redis-reason.ts), so the call fails as Redis being unavailable and is retried or told.
  enableReadyCheck: false,
  // No CLIENT SETINFO at connect (ioredis 5.4+ sends one on Redis 7.2+): the least-privilege
  // user may not run it, and each connection would leave refusals in the server's ACL LOG.
  disableClientInfo: true,
  // ioredis backs off to 2 s between reconnects. Locks want to be usable again soon after Redis is.
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
  // Each socket listens for errors for its whole life (guarded-connector.ts). Not with
  // Sentinel, whose own connector finds the master.
  const Connector = guardedConnector();
  const owned: RedisOptions = Connector ? { ...OWNED_DEFAULTS, Connector } : OWNED_DEFAULTS;
  if (typeof spec === 'string') client = new io.Redis(spec, owned);
  else if ('url' in spec) {
    // ioredis reads the URL first and the options after, each filling only what is not set yet.
    const { url, ...options } = spec;
    client = new io.Redis(url, { ...owned, ...options });
  } else if ('cluster' in spec) {
    const options = spec.clusterOptions ?? {};
    client = new io.Cluster(spec.cluster, {
      ...options,
      redisOptions: { ...owned, ...options.redisOptions },
    });
  } else client = new io.Redis({ ...('sentinels' in spec ? OWNED_DEFAULTS : owned), ...spec });
  return { connection: connectionOf(client), owned: true };
}

/** Redlock's nodes, checked. */
export interface ResolvedQuorum {
  nodes: RedisSpec[];
  nodeTimeoutMs: number;
}
