import type { Cluster, Redis } from 'ioredis';
import type { AnyNodeRedis } from './node-redis-connection';

/**
 * Which client a value is, told by the public methods each has (no client is loaded to ask).
 * The one place that says it: the engine's options check with it, and the Redis backend
 * picks its connection with it.
 */

/** An ioredis client (`Redis`, `Cluster`): it has ioredis's lower-case `evalsha` (node-redis spells it `evalSha`). */
export function isIoRedis(value: unknown): value is Redis | Cluster {
  const v = value as { duplicate?: unknown; evalsha?: unknown };
  return (
    typeof value === 'object' && value !== null && typeof v.duplicate === 'function' && typeof v.evalsha === 'function'
  );
}

/**
 * A node-redis client, Cluster or Sentinel (`redis` 5 or 6): `sendCommand`, `isOpen`, and
 * `duplicate` (or, on `redis` 5's Sentinel, which has none, `use`).
 */
export function isNodeRedis(value: unknown): value is AnyNodeRedis {
  const v = value as { sendCommand?: unknown; duplicate?: unknown; use?: unknown; isOpen?: unknown };
  return (
    typeof value === 'object' &&
    value !== null &&
    !isIoRedis(value) &&
    typeof v.sendCommand === 'function' &&
    (typeof v.duplicate === 'function' || typeof v.use === 'function') &&
    typeof v.isOpen === 'boolean'
  );
}

/** Whether `value` is a client Lockwarden can use as it is: ioredis or node-redis. */
export function isRedisClient(value: unknown): value is Redis | Cluster | AnyNodeRedis {
  return isIoRedis(value) || isNodeRedis(value);
}
