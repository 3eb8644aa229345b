import calculateSlot from 'cluster-key-slot';
import type { LockLogger } from '../observe/logger';
import type { RedisConnection } from './connection';

/**
 * Redisson-style replica acknowledgement: after a lock write, `WAIT` until
 * `replicas` replicas have it or `timeoutMs` passes.
 *
 * @example
 * ```ts
 * LockModule.forRoot({ redis: { sentinels, name: 'mymaster' }, replicaAck: { replicas: 1, timeoutMs: 50 } });
 * ```
 */
export interface ReplicaAckOptions {
  /** How many replicas must have the write. */
  replicas: number;
  /** How long to wait for them, in ms. */
  timeoutMs: number;
}

/** A lock write that fewer replicas than asked for acknowledged, even after retries. */
export class ReplicaAckError extends Error {
  constructor(acked: number, wanted: number, timeoutMs: number) {
    super(`only ${acked} of ${wanted} replicas acknowledged the lock within ${timeoutMs} ms`);
  }
}

/**
 * Runs `WAIT` on the connection that carried a lock write. WAIT counts the
 * writes made on its own connection, so on Cluster it goes to the node that
 * serves the key, over the connection the write used. Where WAIT is not
 * available (renamed, refused by a managed service), it turns itself off
 * with one warning, and locks go on without it.
 */
export class ReplicaAck {
  private disabled = false;

  constructor(
    private readonly client: RedisConnection,
    private readonly options: ReplicaAckOptions,
    private readonly logger: LockLogger,
  ) {}

  /** How long one WAIT may block. */
  get timeoutMs(): number {
    return this.options.timeoutMs;
  }

  /**
   * WAITs on the connection of every node that serves one of `keys` (once per slot: WAIT
   * covers all earlier writes on its connection). Resolves the
   * error to raise when a node had fewer replicas acknowledge than asked for,
   * or undefined when all did (or acknowledgement is off).
   */
  async check(keys: readonly string[]): Promise<ReplicaAckError | undefined> {
    if (this.disabled) return undefined;
    const { replicas, timeoutMs } = this.options;
    let acked: number[];
    try {
      acked = await Promise.all(this.onePerSlot(keys).map((key) => this.client.waitReplicas(key, replicas, timeoutMs)));
    } catch (err) {
      if (!isUnsupported(err)) throw err;
      this.disabled = true;
      this.logger.warn(
        `replicaAck is off: this Redis does not support WAIT (${(err as Error).message}). Locks work without it.`,
      );
      return undefined;
    }
    const fewest = Math.min(...acked);
    return fewest < replicas ? new ReplicaAckError(fewest, replicas, timeoutMs) : undefined;
  }

  /** One key per node to WAIT on: any key on one server, one per hash slot on a Cluster. */
  private onePerSlot(keys: readonly string[]): string[] {
    if (!this.client.cluster) return keys.slice(0, 1);
    const bySlot = new Map<number, string>();
    for (const key of keys) {
      const slot = calculateSlot(key);
      if (!bySlot.has(slot)) bySlot.set(slot, key);
    }
    return [...bySlot.values()];
  }
}

function isUnsupported(err: unknown): boolean {
  return err instanceof Error && /unknown command|not allowed|disabled|NOPERM|not supported/i.test(err.message);
}
