import type { RedisConnection } from './connection';
import type { ReplicaAck } from './replica-ack';

/**
 * What a feature's Redis store part is given (the mutex's, read/write's, the semaphore's): the
 * connection, this engine's instance id, the replica acknowledgement when asked for, and how a
 * release publishes (sharded on a Cluster).
 */
export interface StoreContext {
  readonly client: RedisConnection;
  readonly instanceId: string;
  readonly ack: ReplicaAck | undefined;
  readonly publishCommand: 'publish' | 'spublish';
}

/** How often an acquisition is retried when too few replicas acknowledged it (replicaAck). */
export const ACK_ATTEMPTS = 3;

/**
 * A grant (a fencing token >= 0), acknowledged by enough replicas under replicaAck. When too
 * few have it, a failover now could lose it: give it back, and try again.
 */
export async function acknowledged(
  ack: ReplicaAck | undefined,
  grant: () => Promise<unknown>,
  redisKey: string,
  giveBack: () => Promise<unknown>,
): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const fencingToken = Number(await grant());
    if (fencingToken < 0 || !ack) return fencingToken;
    const short = await ack.check([redisKey]);
    if (!short) return fencingToken;
    await giveBack();
    if (attempt >= ACK_ATTEMPTS) throw short;
  }
}
