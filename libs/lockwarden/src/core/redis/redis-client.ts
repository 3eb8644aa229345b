import { Redis, Cluster, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisClient } from '../backend/lock-backend';

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

/** Where Lockwarden connects to Redis itself: a URL, ioredis options (Sentinel included), or cluster nodes. */
export type RedisTarget = string | RedisOptions | ClusterSpec;

/** Where to find Redis: where to connect (RedisTarget), or a client the caller owns and closes. */
export type RedisSpec = RedisTarget | Redis | Cluster;

/** A client together with whether Lockwarden created it (and so must close it). */
export interface ClientLease {
  client: RedisClient;
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

export function isRedisClient(value: unknown): value is RedisClient {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { duplicate?: unknown }).duplicate === 'function' &&
    typeof (value as { evalsha?: unknown }).evalsha === 'function'
  );
}

export function openClient(spec: RedisSpec): ClientLease {
  if (isRedisClient(spec)) return { client: spec, owned: false };
  // The spec was checked with the engine's options (checkRedisSpec).
  if (typeof spec === 'string') return { client: new Redis(spec, OWNED_DEFAULTS), owned: true };
  if ('cluster' in spec) {
    const options = spec.clusterOptions ?? {};
    return {
      client: new Cluster(spec.cluster, { ...options, redisOptions: { ...OWNED_DEFAULTS, ...options.redisOptions } }),
      owned: true,
    };
  }
  return { client: new Redis({ ...OWNED_DEFAULTS, ...spec }), owned: true };
}

/**
 * Closes a client we own, politely (QUIT) when it is connected and at once
 * otherwise, and resolves only when its socket is gone, so nothing of ours
 * keeps the process alive after shutdown.
 */
/**
 * A connection of the library's own for subscribing, made from `main` (a Cluster's with
 * sharded subscribers). ioredis resubscribes a connection that came back with a SUBSCRIBE
 * whose failure nothing handles: when the connection closes right after it came back (an app
 * shutting down while Redis restarts), that rejection would end the process. So on one server
 * its resubscription is off, and `resubscribe` (below) does it with the failure handled. A
 * Cluster's subscriber group resubscribes by itself, handling its failures.
 */
export function subscriberOf(main: RedisClient): Redis | Cluster {
  return main.isCluster
    ? (main as Cluster).duplicate(undefined, { shardedSubscribers: true })
    : (main as Redis).duplicate({ disconnectTimeout: 0, autoResubscribe: false });
}

/**
 * Subscribes `sub` (made by subscriberOf) again to `channels` after it came back; settles once
 * that is done or failed, never rejecting: a connection closing meanwhile has nothing to hear.
 */
export async function resubscribe(sub: Redis | Cluster, channels: readonly string[]): Promise<void> {
  if (sub.isCluster || channels.length === 0) return;
  await sub.subscribe(...channels).catch(() => undefined);
}

export async function closeClient(client: RedisClient): Promise<void> {
  if (client.status === 'end') return;
  // Only a client with a socket emits 'end'; one between reconnects just drops its retry timer.
  const hasSocket = client.status === 'ready' || client.status === 'connect' || client.status === 'connecting';
  const ended = hasSocket ? new Promise<void>((resolve) => client.once('end', () => resolve())) : undefined;
  if (client.status === 'ready') {
    await client.quit().catch(() => client.disconnect());
  } else {
    client.disconnect();
  }
  await ended;
  // ioredis arms a destroy timer even for a socket already gone (disconnectTimeout, 0 for our
  // clients); let it fire so nothing of ours outlives close().
  if (!hasSocket) await new Promise<void>((resolve) => setTimeout(resolve, 0));
}
