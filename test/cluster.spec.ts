import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Cluster } from 'ioredis';
import { LockEngine, LockLostError, LockModule, Locked } from 'lockwarden';
import type { LockEngineOptions } from 'lockwarden';
import { runWorker } from './harness/child';
import type { ChildScript } from './harness/child';
import { aborted, EventLog } from './harness/event-log';
import { RedisCluster } from './harness/redis-cluster';
import { uniquePrefix } from './harness/redis';

/** The engine on a 3-master Redis Cluster: slots, sharded pub/sub and per-node renewal batches. */
let cluster: RedisCluster;
let admin: Cluster;
const engines: LockEngine[] = [];
const children: ChildScript[] = [];

beforeAll(async () => {
  cluster = await RedisCluster.start({ masters: 3 });
  admin = cluster.client();
}, 60_000);

afterEach(async () => {
  for (const c of children.splice(0)) c.kill();
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

afterAll(async () => {
  admin.disconnect();
  await cluster.stop();
});

function engine(options: Partial<LockEngineOptions> = {}, events?: EventLog): LockEngine {
  const e = new LockEngine({ redis: { cluster: cluster.startupNodes }, onEvent: events?.listener, ...options });
  engines.push(e);
  return e;
}

/** The master serving `key` ("host:port"), asked of Redis itself. */
async function nodeOf(key: string): Promise<string> {
  const slot = Number(await admin.cluster('KEYSLOT', key));
  const range = (await admin.cluster('SLOTS')).find(([from, to]) => slot >= from && slot <= to)!;
  const [host, port] = range[2];
  return `${host}:${port}`;
}

@Injectable()
class Transfers {
  private inside = 0;
  maxInside = 0;

  @Locked(['account:{0}', 'account:{1}', 'account:{2}'])
  async move(a: string, b: string, c: string): Promise<void> {
    this.maxInside = Math.max(this.maxInside, ++this.inside);
    await admin.get(`probe:${a}${b}${c}`);
    this.inside--;
  }
}

function pair(options: Partial<LockEngineOptions> = {}, events?: EventLog): [LockEngine, LockEngine] {
  const keyPrefix = uniquePrefix('cl');
  return [engine({ keyPrefix, ...options }, events), engine({ keyPrefix, ...options }, events)];
}

describe('on Redis Cluster', () => {
  it('keeps mutual exclusion on keys spread over every shard', async () => {
    const [a, b] = pair();
    const keys = Array.from({ length: 12 }, (_, i) => `spread-${i}`);
    const inside = new Map<string, number>();
    let overlap = 0;
    await Promise.all(
      Array.from({ length: 96 }, (_, i) =>
        (i % 2 ? a : b).withLock(keys[i % keys.length], async (lock) => {
          const n = (inside.get(lock.key) ?? 0) + 1;
          inside.set(lock.key, n);
          if (n > 1) overlap++;
          await admin.get(`${lock.key}-probe`);
          inside.set(lock.key, n - 1);
        }),
      ),
    );
    expect(overlap).toBe(0);
  });

  it('wakes waiters through sharded pub/sub, and fair waiters in order', async () => {
    const events = new EventLog();
    const [a, b] = pair({}, events);
    const holder = await a.acquire('wake', { ttlMs: 600_000, fair: true });
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 3; i++) {
      const parked = events.next({ type: 'waiting', key: 'wake' });
      waiters.push(
        (i % 2 ? a : b).acquire('wake', { fair: true, waitMs: 600_000 }).then(async (lock) => {
          order.push(i);
          await lock.release();
        }),
      );
      await parked;
    }
    await holder.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2]);
  });

  it('renews locks on every node in per-slot batches, and notices a deleted key', async () => {
    const events = new EventLog();
    const e = engine({ keyPrefix: uniquePrefix('clrenew'), leaseMs: 300 }, events);
    const locks = await Promise.all(Array.from({ length: 600 }, (_, i) => e.acquire(`r${i}`)));
    await events.next({ type: 'renewed' }, 1_800); // three rounds of all 600
    expect(locks.every((l) => l.isHeld())).toBe(true);
    await admin.del(`${e.options.keyPrefix}{r7}`);
    expect(await aborted(locks[7].signal)).toBeInstanceOf(LockLostError);
    expect(locks.filter((l) => l.isHeld())).toHaveLength(599);
  });

  it('locks keys on different shards one at a time, in sorted order, from a multi-key decorator', async () => {
    // Three account ids whose locks live on three different masters.
    const byNode = new Map<string, string>();
    for (let i = 0; byNode.size < 3; i++) {
      const id = `acct-${i}`;
      const node = await nodeOf(`{account:${id}}`);
      if (!byNode.has(node)) byNode.set(node, id);
    }
    const [x, y, z] = [...byNode.values()];
    const events = new EventLog();
    const app = await Test.createTestingModule({
      imports: [
        LockModule.forRoot({
          redis: { cluster: cluster.startupNodes },
          keyPrefix: uniquePrefix('clmk'),
          onEvent: events.listener,
        }),
      ],
      providers: [Transfers],
    }).compile();
    await app.init();
    try {
      const transfers = app.get(Transfers);
      // Opposite orders, concurrently, many times: sorted acquisition means no deadlock and no overlap.
      await Promise.all(
        Array.from({ length: 30 }, (_, i) => (i % 2 ? transfers.move(z, x, y) : transfers.move(y, z, x))),
      );
      expect(transfers.maxInside).toBe(1);
      const acquired = events.events.filter((e) => e.type === 'acquired').map((e) => e.key);
      const expected = [x, y, z].map((id) => `account:${id}`).sort();
      expect(acquired).toHaveLength(90);
      for (let i = 0; i < acquired.length; i += 3) expect(acquired.slice(i, i + 3)).toEqual(expected);
    } finally {
      await app.close();
    }
  });

  it('runs the randomized read/write check across two processes', async () => {
    const PREFIX = uniquePrefix('clrw');
    const CLUSTER = cluster.startupNodes.map((n) => `${n.host}:${n.port}`).join(',');
    const workers = ['A', 'B'].map((NAME) => {
      const w = runWorker('rw-worker', { CLUSTER, PREFIX, FLOWS: '3', OPS: '100', NAME });
      children.push(w);
      return w;
    });
    await Promise.all(workers.map((w) => w.succeeded()));
    const events = await admin.lrange(`${PREFIX}log`, 0, -1);
    expect(events).toHaveLength(2 * 2 * 300);
    let writer = 0;
    let readers = 0;
    let maxReaders = 0;
    for (const event of events) {
      const [, what, mode] = event.split(' ');
      if (what === 'enter') {
        expect(writer).toBe(0);
        if (mode === 'w') {
          expect(readers).toBe(0);
          writer++;
        } else maxReaders = Math.max(maxReaders, ++readers);
      } else if (mode === 'w') writer--;
      else readers--;
    }
    expect(maxReaders).toBeGreaterThan(1);
  });
});
