import { LockConfigError } from '../../errors';
import { checkInteger, checkKnownNames, checkOptionsObject, describe, integerOr, MAX_MS } from './validate';
import type { RedisSpec, ResolvedQuorum } from '../redis/redis-client';
import { isRedisClient } from '../redis/client-kind';
import type { ReplicaAckOptions } from '../redis/replica-ack';
import { checkTls, checkUrlSpec } from './tls-options';

// The checks of where the engine finds Redis: the `redis` option, a quorum's nodes, and
// replica acknowledgement. The engine's other options are checked in engine-options.ts.

/** `replicaAck`: how many replicas must acknowledge each lock write, and for how long to wait. */
export function resolveReplicaAck(raw: unknown): ReplicaAckOptions {
  const r = checkOptionsObject('replicaAck', raw);
  checkKnownNames('replicaAck', r, new Set(['replicas', 'timeoutMs']));
  return {
    replicas: checkInteger('replicaAck.replicas', r.replicas, 1, 100),
    timeoutMs: checkInteger('replicaAck.timeoutMs', r.timeoutMs, 1, MAX_MS),
  };
}

/** `quorum`: at least 3 independent masters (no Cluster), each a URL, options or a client. */
export function resolveQuorum(raw: unknown): ResolvedQuorum {
  const q = checkOptionsObject('quorum', raw);
  checkKnownNames('quorum', q, new Set(['nodes', 'nodeTimeoutMs']));
  if (!Array.isArray(q.nodes) || q.nodes.length < 3) {
    throw new LockConfigError(
      `quorum.nodes must list at least 3 independent Redis masters, got ${Array.isArray(q.nodes) ? `${q.nodes.length}` : describe(q.nodes)}.`,
    );
  }
  for (const node of q.nodes as unknown[]) {
    const clusterClient =
      isRedisClient(node) && ('masters' in node || (node as { isCluster?: unknown }).isCluster === true);
    if (node === null || node === undefined || clusterClient || (typeof node === 'object' && 'cluster' in node)) {
      throw new LockConfigError(
        'Each quorum node must be one Redis master (a URL, ioredis options or a client), not a Cluster.',
      );
    }
    checkRedisSpec(node, 'each quorum node');
  }
  return {
    nodes: q.nodes as RedisSpec[],
    nodeTimeoutMs: integerOr('quorum.nodeTimeoutMs', q.nodeTimeoutMs, 500, 1, MAX_MS),
  };
}

/**
 * Where to find Redis (the `redis` option, a quorum node): a client the caller owns (anything
 * with `duplicate` and `evalsha`), a redis:// or rediss:// URL, `{ url, ...options }`,
 * `{ cluster: [nodes] }` with at least one node, or a client options object; TLS settings
 * (`tls`) are checked in each. `what` names the option in the error.
 */
export function checkRedisSpec(spec: unknown, what: string): void {
  if (typeof spec === 'string') {
    if (!/^rediss?:\/\//.test(spec)) {
      throw new LockConfigError(`${what} must be a redis:// or rediss:// URL, got "${spec.slice(0, 60)}".`);
    }
    return;
  }
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new LockConfigError(
      `${what} must be a redis:// URL, an ioredis options object, or a Redis client (ioredis, node-redis or Valkey GLIDE), got ${describe(spec)}.`,
    );
  }
  // A client of the caller's own is theirs to have set up.
  if (isRedisClient(spec)) return;
  const fields = spec as Record<string, unknown>;
  if ('cluster' in spec) {
    const nodes = fields.cluster;
    if (!Array.isArray(nodes) || nodes.length === 0) {
      throw new LockConfigError(`${what}.cluster must be a non-empty list of cluster nodes, e.g. [{ host, port }].`);
    }
    const options = fields.clusterOptions;
    if (options === undefined) return;
    const { redisOptions } = checkOptionsObject(`${what}.clusterOptions`, options);
    if (redisOptions === undefined) return;
    checkTls(
      checkOptionsObject(`${what}.clusterOptions.redisOptions`, redisOptions).tls,
      `${what}.clusterOptions.redisOptions.tls`,
    );
    return;
  }
  if ('url' in spec) checkUrlSpec(fields, what);
  else checkTls(fields.tls, `${what}.tls`);
}
