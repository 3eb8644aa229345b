import { cells, describeOnce } from '../harness/cells';
import { workersForFile } from '../harness/child';
import type { AnyClientKind } from '../harness/clients';
import { expectClean, historyRunner } from '../harness/history-run';
import { hasValkey, startRedis, valkey9 } from '../harness/redis';
import type { ServerKind } from '../harness/redis';

// The history check on one server. Clusters and the Redlock quorum: history-cluster.spec.ts.
const runHistory = historyRunner();
const worker = workersForFile();

/** Runs on one server: its title, its kind, the client the workers use (ioredis unless named), whether it is here. */
const SINGLE: [string, ServerKind, AnyClientKind | undefined, boolean][] = [
  ['on a single Redis', 'redis', undefined, true],
  ['on a single Valkey', 'valkey', undefined, hasValkey],
  ["on a single Valkey 9, whose releases are the server's own compare-and-delete", 'valkey9', undefined, !!valkey9],
  ['on a single Redis, through a Valkey GLIDE client', 'redis', 'glide', true],
  [
    "on a single Valkey 9, through a Valkey GLIDE client, with the server's own compare-and-delete",
    'valkey9',
    'glide',
    !!valkey9,
  ],
  ['on a single Redis, through a node-redis client', 'redis', 'node-redis', true],
];

/**
 * npm test's cell: Redis through node-redis. With history-cluster.spec.ts's two (a Cluster
 * through GLIDE, the quorum through ioredis) that is one run per topology and one per client;
 * the rest run in the matrix.
 */
const inSuite = ([, server, client]: (typeof SINGLE)[number]): boolean => server === 'redis' && client === 'node-redis';

describe('history check: 10 000 sections over 4 processes', () => {
  for (const [title, server, client, here] of cells(SINGLE, inSuite)) {
    (here ? it : it.skip)(
      title,
      async () => {
        const target = await startRedis({ server });
        const admin = target.client();
        try {
          expectClean(await runHistory({ REDIS: target.url, ...(client ? { CLIENT: client } : {}) }));
          // On Valkey 9 the releases nobody waited for took the native command, not the script.
          if (server === 'valkey9') expect(await admin.info('commandstats')).toMatch(/cmdstat_delifeq:calls=[1-9]/);
        } finally {
          admin.disconnect();
          await target.stop();
        }
      },
      180_000,
    );
  }
});

describeOnce('history workers', () => {
  it('end with their error when it fails, instead of running on until the test times out', async () => {
    // A GLIDE client keeps a process alive after its main function failed: the worker must end
    // itself, so a failure reads as its error, not as a timeout with nothing said.
    const target = await startRedis();
    try {
      const w = worker('history-worker', { REDIS: target.url, CLIENT: 'glide', PREFIX: 'p'.repeat(300) });
      await expect(w.succeeded()).rejects.toThrow(/child exited with 1:[\s\S]*keyPrefix must be a string/);
    } finally {
      await target.stop();
    }
  }, 60_000);
});
