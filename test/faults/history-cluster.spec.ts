import { Redis } from 'ioredis';
import { describeOnce, cells, glideSuiteServer, itCells } from '../harness/cells';
import { CLIENT_KINDS } from '../harness/clients';
import type { AnyClientKind } from '../harness/clients';
import { expectClean, historyRunner } from '../harness/history-run';
import { RedisCluster } from '../harness/redis-cluster';
import { redisName, valkey9 } from '../harness/redis';
import { RedisProcess } from '../harness/redis-process';

// The history check on Clusters and on a Redlock quorum. One server: history.spec.ts.
const runHistory = historyRunner();

/** The server binary of GLIDE's suite cell: Valkey 9 where it is built, else the default Redis. */
const glideSuiteBinary = (): string | undefined => (glideSuiteServer(valkey9) === 'valkey9' ? valkey9 : undefined);

/** Runs on a 3-master Cluster: its title, its server binary (redis-server unless named), the workers' client. */
const CLUSTERS: [string, string | undefined, AnyClientKind][] = [
  [`on a 3-master ${redisName} Cluster, through a Valkey GLIDE cluster client`, undefined, 'glide'],
  ...(valkey9
    ? [
        ['on a 3-master Valkey 9 Cluster, through a Valkey GLIDE cluster client', valkey9, 'glide'] as [
          string,
          string,
          'glide',
        ],
      ]
    : []),
  ...CLIENT_KINDS.map((kind): [string, undefined, AnyClientKind] => [
    `on a 3-master Cluster, through ${kind}`,
    undefined,
    kind,
  ]),
];

describe('history check: 10 000 sections over 4 processes', () => {
  // npm test's cell: a Cluster through GLIDE, on Valkey 9 where it is built (its own
  // compare-and-delete too). In npm test node-redis runs on one server and ioredis on the
  // quorum; on Clusters both run in the matrix.
  itCells(
    cells(CLUSTERS, ([, binary, client]) => client === 'glide' && binary === glideSuiteBinary()),
    (title) => title,
    async (_title, binary, client) => {
      const cluster = await RedisCluster.start({ masters: 3, binary });
      try {
        const CLUSTER = cluster.startupNodes.map((n) => `${n.host}:${n.port}`).join(',');
        expectClean(await runHistory({ CLUSTER, CLIENT: client }));
      } finally {
        await cluster.stop();
      }
    },
    180_000,
  );
});

describeOnce('history check: 10 000 sections over 4 processes', () => {
  it('on a Redlock quorum of 5 masters', async () => {
    const masters = await Promise.all(Array.from({ length: 5 }, () => RedisProcess.start()));
    try {
      expectClean(await runHistory({ QUORUM: masters.map((m) => m.url).join(',') }));
      // Tokens came from the quorum: every master that took part counted them.
      const probe = new Redis(masters[0].url);
      expect(Number(await probe.dbsize())).toBeGreaterThan(0);
      probe.disconnect();
    } finally {
      await Promise.all(masters.map((m) => m.destroy()));
    }
  }, 180_000);
});
