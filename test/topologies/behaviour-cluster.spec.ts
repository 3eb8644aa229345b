import { LockModule } from 'lockwarden';
import { describeLockBehaviour } from '../behaviour/lock-behaviour';
import { engineFactory } from '../harness/engines';
import { cells, describeCells } from '../harness/cells';
import { CLIENT_KINDS } from '../harness/clients';
import { clusterForFile } from '../harness/redis-cluster';
import { uniquePrefix } from '../harness/redis';

/**
 * The shared behaviour suite on a 3-master Redis Cluster (sharded pub/sub, scripts routed by
 * their hash tag), through each client: an ioredis Cluster Lockwarden makes, and a node-redis
 * `createCluster()` client the application made.
 */
const nodes = clusterForFile({ masters: 3 });

// npm test's cell: ioredis (node-redis is npm test's on one server); node-redis's Cluster runs in the matrix.
describeCells(
  cells(
    CLIENT_KINDS.map((kind) => [kind] as const),
    ([kind]) => kind === 'ioredis',
  ),
  (kind) => `through ${kind}`,
  (kind) => {
    const { pair, topology } = engineFactory(nodes.where, `behaviour-cluster-${kind}`, kind);

    describeLockBehaviour(`a Redis Cluster (${kind})`, () => ({
      pair,
      module: () =>
        LockModule.forRoot({ ...topology(nodes.where()), keyPrefix: uniquePrefix(`behaviour-cluster-nest-${kind}`) }),
    }));
  },
);
