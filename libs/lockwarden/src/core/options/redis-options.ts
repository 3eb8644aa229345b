import { LockConfigError } from '../../errors';
import { checkInteger, checkKnownNames, checkOptionsObject, describe, integerOr, MAX_MS } from './validate';
import type { RedisSpec, ResolvedQuorum } from '../redis/redis-client';
import { isRedisClient } from '../redis/client-kind';
import type { ReplicaAckOptions } from '../redis/replica-ack';
import { checkTls, checkUrlSpec } from './tls-options';

// Where the engine finds Redis: one of `redis`, `client` and `quorum`, and replica
// acknowledgement, with their checks. The engine's other options are in engine-options.ts.

/**
 * Redlock: each lock is taken on a majority of independent Redis masters, so
 * it survives the loss of a minority of them. Mutexes only: read/write locks
 * and `fair` are refused with a quorum.
 *
 * @example
 * ```ts
 * LockModule.forRoot({
 *   quorum: { nodes: ['redis://10.0.0.1:6379', 'redis://10.0.0.2:6379', 'redis://10.0.0.3:6379'] },
 * });
 * ```
 */
export interface QuorumOptions {
  /** At least 3 independent masters (not replicas of each other, not one Cluster): URLs, ioredis options or clients you own. */
  nodes: RedisSpec[];
  /** The longest one node may take to answer, never more than a tenth of the lease. Default 500 ms. */
  nodeTimeoutMs?: number;
}

/** Where the engine finds Redis, checked. */
export interface ResolvedTopology {
  /** The single topology's Redis. Undefined with a quorum, or when a backend was given instead. */
  redis: RedisSpec | undefined;
  quorum: ResolvedQuorum | undefined;
  replicaAck: ReplicaAckOptions | undefined;
}

/**
 * Checks `redis`, `client`, `quorum` and `replicaAck` of the engine's options `o`. One of the
 * first three is needed, unless `backendGiven` (the in-memory backend of LockTestingModule).
 */
export function resolveTopology(o: Record<string, unknown>, backendGiven: boolean): ResolvedTopology {
  const quorum = o.quorum === undefined ? undefined : resolveQuorum(o.quorum);
  const given = ['redis', 'client', 'quorum'].filter((name) => o[name] !== undefined);
  if (given.length > 1) {
    throw new LockConfigError(
      `Give one of redis, client and quorum, not ${given.join(' and ')}: each names every Redis the locks use.`,
    );
  }
  if (!backendGiven && given.length === 0) throw noTopology();
  if (o.redis !== undefined) {
    if (isRedisClient(o.redis)) {
      throw new LockConfigError(
        'redis says where to connect (a URL, options or { cluster }); pass a client you own as client instead.',
      );
    }
    checkRedisSpec(o.redis, 'redis');
  }
  if (o.client !== undefined && !isRedisClient(o.client)) {
    throw new LockConfigError(
      `client must be a Redis client you own (ioredis Redis or Cluster, node-redis createClient, createCluster or createSentinel, Valkey GLIDE GlideClient or GlideClusterClient), got ${describe(o.client)}; give redis for a URL or options.`,
    );
  }
  return {
    redis: quorum ? undefined : ((o.client ?? o.redis) as RedisSpec | undefined),
    quorum,
    replicaAck: o.replicaAck === undefined ? undefined : resolveReplicaAck(o.replicaAck),
  };
}

/**
 * The options name a Redis to use (`redis`, `client` or `quorum`), or a LockConfigError saying
 * one is needed. For the Redis backend, when it is the one the engine opens.
 */
export function checkTopologyGiven(resolved: Pick<ResolvedTopology, 'redis' | 'quorum'>): void {
  if (resolved.redis === undefined && resolved.quorum === undefined) throw noTopology();
}

function noTopology(): LockConfigError {
  return new LockConfigError(
    'The redis option is required: a redis:// URL or ioredis options (or give client, a client you own).',
  );
}

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
    // A client is a Cluster by what it has; a spec, by its `cluster` list. Not a client by
    // `'cluster' in node`: every ioredis client has a cluster() method, for the CLUSTER command.
    const client = isRedisClient(node);
    const clusterClient = client && ('masters' in node || (node as { isCluster?: unknown }).isCluster === true);
    const clusterSpec = !client && typeof node === 'object' && node !== null && 'cluster' in node;
    if (node === null || node === undefined || clusterClient || clusterSpec) {
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
 * `{ cluster: [nodes] }` with at least one node, or a client options object. TLS settings
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
