import { Redis } from 'ioredis';
import { workersForFile } from '../harness/child';
import { checkHistory, type Section } from '../harness/history';
import { RedisCluster } from '../harness/redis-cluster';
import { CLIENT_KINDS } from '../harness/clients';
import type { AnyClientKind } from '../harness/clients';
import { hasValkey, redisName, startRedis, uniquePrefix, valkey9 } from '../harness/redis';
import type { ServerKind } from '../harness/redis';
import { RedisProcess } from '../harness/redis-process';

/**
 * 10 000 critical sections per topology, from 4 processes with 2 flows each on 4 keys,
 * checked for overlap between live holders and for fencing tokens that rise in entry order.
 */
const PROCESSES = 4;
const FLOWS = 2;
const SECTIONS = 1_250; // per flow: 4 × 2 × 1 250 = 10 000
const worker = workersForFile();

async function runHistory(env: Record<string, string>): Promise<Section[]> {
  const PREFIX = uniquePrefix('history');
  const workers = Array.from({ length: PROCESSES }, () =>
    worker('history-worker', { ...env, PREFIX, KEYS: '4', FLOWS: String(FLOWS), SECTIONS: String(SECTIONS) }),
  );
  // Bounded below the test's own timeout, so a worker that hangs says where: connecting, or
  // in its sections (it prints them all at the end), with what it wrote to stderr.
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const states = workers.map(
        (w, i) =>
          `worker ${i}: ${w.exitStatus === undefined ? 'still running' : `exited ${w.exitStatus}`}, ` +
          `${w.lines.includes('connected') ? 'connected' : 'not connected'}, ${w.lines.length} lines; ` +
          `stderr: ${w.stderrTail(800)}`,
      );
      reject(new Error(`the history workers did not finish within 150 s:\n${states.join('\n')}`));
    }, 150_000);
  });
  try {
    await Promise.race([Promise.all(workers.map((w) => w.succeeded())), hung]);
  } finally {
    clearTimeout(timer);
  }
  return workers.flatMap((w) =>
    w.lines.filter((l) => l.startsWith('section ')).map((l) => JSON.parse(l.slice(8)) as Section),
  );
}

function expectClean(sections: Section[]): void {
  expect(sections).toHaveLength(PROCESSES * FLOWS * SECTIONS);
  expect(checkHistory(sections)).toEqual([]);
  // Every key really was contended by several processes.
  expect(new Set(sections.map((s) => s.key)).size).toBe(4);
}

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
  for (const [title, server, client, here] of SINGLE) {
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

  it.each(CLUSTERS)(
    '%s',
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

describe('history workers', () => {
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
