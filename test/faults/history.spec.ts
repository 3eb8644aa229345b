import { Redis } from 'ioredis';
import { runWorker } from '../harness/child';
import type { ChildScript } from '../harness/child';
import { checkHistory, type Section } from '../harness/history';
import { RedisCluster } from '../harness/redis-cluster';
import { CLIENT_KINDS } from '../harness/clients';
import { hasValkey, startRedis, uniquePrefix, valkey9 } from '../harness/redis';
import { RedisProcess } from '../harness/redis-process';

/**
 * 10 000 critical sections per topology, from 4 processes with 2 flows each on 4 keys,
 * checked for overlap between live holders and for fencing tokens that rise in entry order.
 */
const PROCESSES = 4;
const FLOWS = 2;
const SECTIONS = 1_250; // per flow: 4 × 2 × 1 250 = 10 000
const children: ChildScript[] = [];

afterEach(() => {
  for (const c of children.splice(0)) c.kill();
});

async function runHistory(env: Record<string, string>): Promise<Section[]> {
  const PREFIX = uniquePrefix('history');
  const workers = Array.from({ length: PROCESSES }, () => {
    const w = runWorker('history-worker', {
      ...env,
      PREFIX,
      KEYS: '4',
      FLOWS: String(FLOWS),
      SECTIONS: String(SECTIONS),
    });
    children.push(w);
    return w;
  });
  await Promise.all(workers.map((w) => w.succeeded()));
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

describe('history check: 10 000 sections over 4 processes', () => {
  it('on a single Redis', async () => {
    const redis = await startRedis();
    try {
      expectClean(await runHistory({ REDIS: redis.url }));
    } finally {
      await redis.stop();
    }
  }, 180_000);

  (hasValkey ? it : it.skip)(
    'on a single Valkey',
    async () => {
      const valkey = await startRedis({ server: 'valkey' });
      try {
        expectClean(await runHistory({ REDIS: valkey.url }));
      } finally {
        await valkey.stop();
      }
    },
    180_000,
  );

  (valkey9 ? it : it.skip)(
    "on a single Valkey 9, whose releases are the server's own compare-and-delete",
    async () => {
      const server = await startRedis({ server: 'valkey9' });
      const admin = server.client();
      try {
        expectClean(await runHistory({ REDIS: server.url }));
        // The releases nobody waited for took the native command, not the script.
        expect(await admin.info('commandstats')).toMatch(/cmdstat_delifeq:calls=[1-9]/);
      } finally {
        admin.disconnect();
        await server.stop();
      }
    },
    180_000,
  );

  it('on a single Redis, through a Valkey GLIDE client', async () => {
    const redis = await startRedis();
    try {
      expectClean(await runHistory({ REDIS: redis.url, CLIENT: 'glide' }));
    } finally {
      await redis.stop();
    }
  }, 180_000);

  (valkey9 ? it : it.skip)(
    "on a single Valkey 9, through a Valkey GLIDE client, with the server's own compare-and-delete",
    async () => {
      const server = await startRedis({ server: 'valkey9' });
      const admin = server.client();
      try {
        expectClean(await runHistory({ REDIS: server.url, CLIENT: 'glide' }));
        expect(await admin.info('commandstats')).toMatch(/cmdstat_delifeq:calls=[1-9]/);
      } finally {
        admin.disconnect();
        await server.stop();
      }
    },
    180_000,
  );

  it.each([['Redis 7', undefined], ...(valkey9 ? [['Valkey 9', valkey9] as [string, string]] : [])] as [
    string,
    string | undefined,
  ][])(
    'on a 3-master %s Cluster, through a Valkey GLIDE cluster client',
    async (_name, binary) => {
      const cluster = await RedisCluster.start({ masters: 3, binary });
      try {
        const CLUSTER = cluster.startupNodes.map((n) => `${n.host}:${n.port}`).join(',');
        expectClean(await runHistory({ CLUSTER, CLIENT: 'glide' }));
      } finally {
        await cluster.stop();
      }
    },
    180_000,
  );

  it('on a single Redis, through a node-redis client', async () => {
    const redis = await startRedis();
    try {
      expectClean(await runHistory({ REDIS: redis.url, CLIENT: 'node-redis' }));
    } finally {
      await redis.stop();
    }
  }, 180_000);

  it.each(CLIENT_KINDS)(
    'on a 3-master Cluster, through %s',
    async (kind) => {
      const cluster = await RedisCluster.start({ masters: 3 });
      try {
        const CLUSTER = cluster.startupNodes.map((n) => `${n.host}:${n.port}`).join(',');
        expectClean(await runHistory({ CLUSTER, CLIENT: kind }));
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
