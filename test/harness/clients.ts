import { createClient, createCluster } from 'redis';
import type { LockEngineOptions } from '../../libs/lockwarden/src/core/options/engine-options';

/**
 * Which Redis client the engine is given: ioredis (made by Lockwarden from a URL, the
 * default), or a node-redis client the test makes and passes as `client`, as an application
 * that already has one would.
 */
export type ClientKind = 'ioredis' | 'node-redis';

/** Both clients, for `describe.each`. */
export const CLIENT_KINDS: readonly ClientKind[] = ['ioredis', 'node-redis'];

/** Where a Redis is: one server's URL, or a Cluster's startup nodes. */
export type Where = string | { cluster: { host: string; port: number }[] };

interface Closable {
  readonly isOpen: boolean;
  destroy(): unknown;
}

/**
 * Makes the topology options for engines on `kind`, and closes the node-redis clients it made
 * (after the engines that used them: call `closeClients()` once they are closed). Each call
 * makes a new client, so two engines are two connections, as two processes would be.
 */
export function clientMaker(kind: ClientKind): {
  topology(where: Where): Pick<LockEngineOptions, 'redis' | 'client'>;
  closeClients(): Promise<void>;
} {
  const made: Closable[] = [];
  return {
    topology(where) {
      if (kind === 'ioredis') return { redis: where };
      if (typeof where === 'string') {
        const client = createClient({ url: where });
        // An application listens to its client's errors; node-redis throws them otherwise.
        client.on('error', () => undefined);
        client.connect().catch(() => undefined);
        made.push(client);
        return { client };
      }
      const cluster = createCluster({ rootNodes: where.cluster.map((n) => ({ url: `redis://${n.host}:${n.port}` })) });
      cluster.on('error', () => undefined);
      cluster.connect().catch(() => undefined);
      made.push(cluster);
      return { client: cluster };
    },
    async closeClients() {
      for (const client of made.splice(0)) if (client.isOpen) await client.destroy();
    },
  };
}
