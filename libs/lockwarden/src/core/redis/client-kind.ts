import type { Cluster, Redis } from 'ioredis';
import type { AnyNodeRedis } from './node-redis-types';
import type { AnyGlideClient } from './glide-connection';

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

/**
 * A Valkey GLIDE client (`@valkey/valkey-glide` 2.x), standalone or cluster: `customCommand`,
 * `invokeScript` and `getPubSubMessage`, which neither other client has.
 */
export function isGlide(value: unknown): value is AnyGlideClient {
  const v = value as { customCommand?: unknown; invokeScript?: unknown; getPubSubMessage?: unknown };
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof v.customCommand === 'function' &&
    typeof v.invokeScript === 'function' &&
    typeof v.getPubSubMessage === 'function'
  );
}

/** Whether `value` is a client Lockwarden can use as it is: ioredis, node-redis or Valkey GLIDE. */
export function isRedisClient(value: unknown): value is Redis | Cluster | AnyNodeRedis | AnyGlideClient {
  return isIoRedis(value) || isNodeRedis(value) || isGlide(value);
}
