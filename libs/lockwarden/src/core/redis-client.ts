import { Redis, Cluster, type RedisOptions } from 'ioredis';
import { LockConfigError } from '../errors';

/** A connected ioredis client: a single node (also through Sentinel) or a Cluster. */
export type RedisClient = Redis | Cluster;

/** Where to find Redis: a URL, ioredis options, or a client the caller owns and closes. */
export type RedisSpec = string | RedisOptions | Redis | Cluster;

/** A client together with whether Lockwarden created it (and so must close it). */
export interface ClientLease {
  client: RedisClient;
  owned: boolean;
}

/**
 * Clients we create fail commands after a few reconnection attempts rather
 * than queueing them for minutes, so a dead Redis surfaces as LockBackendError
 * within a lock's wait budget.
 */
const OWNED_DEFAULTS: RedisOptions = { maxRetriesPerRequest: 2, connectTimeout: 5_000 };

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
  if (typeof spec === 'string') {
    if (!/^rediss?:\/\//.test(spec)) {
      throw new LockConfigError(`redis must be a redis:// or rediss:// URL, got "${spec.slice(0, 60)}".`);
    }
    return { client: new Redis(spec, OWNED_DEFAULTS), owned: true };
  }
  if (typeof spec === 'object' && spec !== null && !Array.isArray(spec)) {
    return { client: new Redis({ ...OWNED_DEFAULTS, ...spec }), owned: true };
  }
  throw new LockConfigError(
    'redis must be a redis:// URL, an ioredis options object, or an ioredis Redis/Cluster instance.',
  );
}

/**
 * Closes a client we own, politely (QUIT) when it is connected and at once
 * otherwise, and resolves only when its socket is gone, so nothing of ours
 * keeps the process alive after shutdown.
 */
export async function closeClient(client: RedisClient): Promise<void> {
  if (client.status === 'end') return;
  const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
  if (client.status === 'ready') {
    await client.quit().catch(() => client.disconnect());
  } else {
    client.disconnect();
  }
  await ended;
}
