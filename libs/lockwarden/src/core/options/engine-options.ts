import { hostname } from 'node:os';
import { LockConfigError } from '../../errors';
import type { LockEventListener } from '../observe/events';
import type { LockLogger } from '../observe/logger';
import { SILENT_LOGGER } from '../observe/logger';
import type { LockDefaults } from './options';
import {
  checkBoolean,
  integerOr,
  checkKnownNames,
  checkOptionsObject,
  describe,
  MAX_MS,
  MIN_LEASE_MS,
} from './validate';
import { isWellFormed } from '../backend/lock-keys';
import type { RedisClient, RedisTarget } from '../redis/redis-client';
import type { ReplicaAckOptions } from '../redis/replica-ack';
import { resolveTopology } from './redis-options';
import type { QuorumOptions, ResolvedTopology } from './redis-options';

/**
 * Settings of one lock engine (one `LockModule`).
 *
 * @example
 * ```ts
 * const engine = new LockEngine({ redis: 'redis://127.0.0.1:6380', keyPrefix: 'billing:lock:' });
 * ```
 */
export interface LockEngineOptions {
  /**
   * Where to connect: a redis:// URL, ioredis options (Sentinel included), or
   * `{ cluster: [...] }`. Lockwarden opens the connections and closes them. Give one of
   * `redis`, `client` and `quorum`.
   */
  redis?: RedisTarget;
  /**
   * A client you own, already connected: ioredis (`Redis`, one server or Sentinel, or
   * `Cluster`) or node-redis, `redis` 5 or 6 (`createClient()`, `createCluster()`,
   * `createSentinel()`). Lockwarden opens what else it needs (a subscriber) from it, and
   * never closes it: close it after the application. With node-redis, ioredis is never loaded.
   *
   * @example
   * ```ts
   * LockModule.forRoot({ client: new Redis(process.env.REDIS_URL!) });
   * // or, with node-redis:
   * LockModule.forRoot({ client: await createClient({ url: process.env.REDIS_URL }).on('error', console.error).connect() });
   * ```
   */
  client?: RedisClient;
  /** Redlock across several independent Redis masters, instead of `redis` or `client`. */
  quorum?: QuorumOptions;
  /**
   * After taking a lock, WAIT until this many replicas have it. With fewer, give it back and
   * retry. Narrows the window in which a failover loses a lock, but does not close it.
   */
  replicaAck?: ReplicaAckOptions;
  /** Prefix of every Redis key and channel. Default `'lock:'`. */
  keyPrefix?: string;
  /** Lease the watchdog keeps renewing while a lock is held (unless it was taken with `renew: false`). Default 30 000 ms. */
  leaseMs?: number;
  /** Default wait budget of `acquire` and `withLock`. Default 10 000 ms. */
  waitMs?: number;
  /** Human-readable id of this process, stored beside each lock for inspection. Default `hostname:pid`. */
  instanceId?: string;
  /**
   * How long before a lease ends a holder whose renewal has not succeeded is told the lock is
   * lost. Default min(2 000 ms, lease/5). Never more than a third of a lease, whatever is set
   * here, so a renewal always gets its chance: with a 1 s lease, a margin set to 5 s acts as 333 ms.
   */
  safetyMarginMs?: number;
  /**
   * The longest a Redis call outside an acquire may take: a withdrawal, and a holder's release,
   * `fencingToken()` or `extend()`. Default 2 000 ms.
   *
   * Two rules of acquires use it too. Before the engine's connection is first ready, an acquire
   * waits this long for Redis, connecting included, if that is longer than its own bound. And
   * once Redis has been known unreachable for this long, acquires and scheduled ticks fail with
   * LockBackendError, however long their `waitMs`. Both rules are stated in docs/locks.md,
   * "When Redis does not answer".
   */
  commandTimeoutMs?: number;
  /**
   * How long a waiter's place on the server lasts (a queued mutex waiter's, a waiting
   * writer's) unless the waiter checks back, which it does every 30 % of it. A release hands
   * a queued waiter the lock for 70 % of it (the hand-off lease, extended once the waiter
   * hears of it). A waiter whose process dies holds the others up by at most about this
   * long. Raise it where processes may stall longer than 70 % of it (long GC pauses, starved
   * CPUs): a waiter stalled past its place loses its turn. Default 1 000 ms, at least 300.
   *
   * @example
   * ```ts
   * LockModule.forRoot({ redis: process.env.REDIS_URL!, placeMs: 5_000 });
   * ```
   */
  placeMs?: number;
  /**
   * Called for every lock event (acquired, released, waiting, timeout, skipped, extended, renewed,
   * renewFailed, lost) and, for scheduled jobs, overrun and missed.
   */
  onEvent?: LockEventListener;
  /**
   * Record OpenTelemetry metrics through @opentelemetry/api when the application has it
   * (see `otelMetricsListener`). Default true. Without the package it costs nothing.
   */
  metrics?: boolean;
  /**
   * Record OpenTelemetry spans through @opentelemetry/api when the application has it. Default
   * true. Without the package it costs nothing. Both spans are children of the span active
   * where the lock was asked for, so the hold span is the acquire's sibling:
   * - `lockwarden.acquire`, from the ask to the grant or refusal: `lock.name`, `lock.key`,
   *   `lock.kind` (mutex, read, write, permit), `lock.outcome` (acquired, timeout, busy when no
   *   wait was asked for, aborted, error), `lock.waited_ms`, and `lock.fencing_token` when
   *   acquired. Only `error` sets the status to ERROR, with `error.type`.
   * - `lockwarden.hold`, from the grant to the release or the loss: `lock.name`, `lock.key`,
   *   `lock.kind`, `lock.fencing_token`, `lock.outcome` (released, lost) and `lock.lost_reason`.
   *
   * A reentrant acquire of a lock already held makes neither span, and a config error thrown
   * before anything is asked of Redis makes none either. The owner token is never recorded.
   * Parents are found through OpenTelemetry's context manager, so register one with the
   * tracer provider (the Node SDK does both).
   *
   * @example
   * ```ts
   * // At startup: register() installs the provider and an async context manager.
   * new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] }).register();
   * // Traces are on by default. `traces: false` turns them off for this module.
   * LockModule.forRoot({ redis: process.env.REDIS_URL!, traces: false });
   * ```
   */
  traces?: boolean;
  /** Default cap on how long one acquisition may be kept alive (see AcquireOptions.maxHoldMs). Default: none. */
  maxHoldMs?: number;
  /** On shutdown, how long in-flight locked work may take to finish after its signal aborted. Default 10 000 ms. */
  shutdownGraceMs?: number;
  /**
   * What to do when a server may evict lock keys (a `maxmemory` with any policy but
   * `noeviction`, as managed services ship: their `volatile-lru` evicts keys with a TTL, and
   * every lock key has one, first). `'warn'` (the default) logs once per server at startup and
   * tells holders whose keys were evicted within a second; `'refuse'` also fails every acquire
   * with a LockConfigError naming the policy, before anything is written to Redis. With a
   * Cluster, one evicting master is enough: slots move between masters.
   *
   * @example
   * ```ts
   * LockModule.forRoot({ redis: process.env.REDIS_URL!, onEvictingServer: 'refuse' });
   * ```
   */
  onEvictingServer?: 'warn' | 'refuse';
}

export interface ResolvedEngineOptions extends LockDefaults, ResolvedTopology {
  instanceId: string;
  commandTimeoutMs: number;
  placeMs: number;
  logger: LockLogger;
  onEvent: LockEventListener | undefined;
  metrics: boolean;
  traces: boolean;
  shutdownGraceMs: number;
  onEvictingServer: 'warn' | 'refuse';
}

export const ENGINE_OPTION_NAMES: ReadonlySet<string> = new Set([
  'redis',
  'client',
  'quorum',
  'replicaAck',
  'keyPrefix',
  'leaseMs',
  'waitMs',
  'instanceId',
  'safetyMarginMs',
  'commandTimeoutMs',
  'placeMs',
  'onEvent',
  'metrics',
  'traces',
  'maxHoldMs',
  'shutdownGraceMs',
  'onEvictingServer',
]);

/**
 * Checks the engine's options. `backendGiven`: the store comes from a backend (the
 * in-memory one of LockTestingModule), so no Redis topology is needed.
 */
export function resolveEngineOptions(
  raw: unknown,
  logger: LockLogger = SILENT_LOGGER,
  backendGiven = false,
): ResolvedEngineOptions {
  const o = checkOptionsObject('Lock module', raw);
  checkKnownNames('lock module', o, ENGINE_OPTION_NAMES);
  const topology = resolveTopology(o, backendGiven);
  const keyPrefix = o.keyPrefix === undefined ? 'lock:' : o.keyPrefix;
  if (typeof keyPrefix !== 'string' || keyPrefix.length > 256) {
    throw new LockConfigError(`keyPrefix must be a string of at most 256 characters, got ${describe(keyPrefix)}.`);
  }
  if (!isWellFormed(keyPrefix)) {
    throw new LockConfigError(
      `keyPrefix ${describe(keyPrefix)} contains a lone UTF-16 surrogate. Redis would store it as U+FFFD, so prefixes that differ only there would share their locks.`,
    );
  }
  const instanceId = o.instanceId === undefined ? `${hostname()}:${process.pid}` : o.instanceId;
  if (
    typeof instanceId !== 'string' ||
    instanceId.length === 0 ||
    instanceId.length > 200 ||
    instanceId.includes('|')
  ) {
    throw new LockConfigError(
      `instanceId must be a non-empty string of at most 200 characters without "|", got ${describe(instanceId)}.`,
    );
  }
  if (o.onEvent !== undefined && typeof o.onEvent !== 'function') {
    throw new LockConfigError(`onEvent must be a function, got ${describe(o.onEvent)}.`);
  }
  const leaseMs = integerOr('leaseMs', o.leaseMs, 30_000, MIN_LEASE_MS, MAX_MS);
  return {
    ...topology,
    keyPrefix,
    leaseMs,
    waitMs: integerOr('waitMs', o.waitMs, 10_000, 0, MAX_MS),
    instanceId,
    safetyMarginMs: integerOr('safetyMarginMs', o.safetyMarginMs, undefined, 0, MAX_MS),
    commandTimeoutMs: integerOr('commandTimeoutMs', o.commandTimeoutMs, 2_000, 1, MAX_MS),
    placeMs: integerOr('placeMs', o.placeMs, 1_000, 300, MAX_MS),
    logger,
    onEvent: o.onEvent as LockEventListener | undefined,
    metrics: checkBoolean('metrics', o.metrics) ?? true,
    traces: checkBoolean('traces', o.traces) ?? true,
    maxHoldMs: integerOr('maxHoldMs', o.maxHoldMs, undefined, MIN_LEASE_MS, MAX_MS),
    shutdownGraceMs: integerOr('shutdownGraceMs', o.shutdownGraceMs, 10_000, 0, MAX_MS),
    onEvictingServer: checkOnEvictingServer(o.onEvictingServer),
  };
}

function checkOnEvictingServer(value: unknown): 'warn' | 'refuse' {
  if (value === undefined) return 'warn';
  if (value === 'warn' || value === 'refuse') return value;
  throw new LockConfigError(`onEvictingServer must be 'warn' or 'refuse', got ${describe(value)}.`);
}
