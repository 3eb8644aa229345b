import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockEngine, LockLostError, LockModule, Locked } from 'lockwarden';
import { workersForFile } from '../harness/child';
import { aborted, EventLog } from '../harness/event-log';
import { gate } from '../harness/gate';
import { grantOrder } from '../harness/grant-order';
import { clusterForFile, RedisCluster } from '../harness/redis-cluster';
import { uniquePrefix } from '../harness/redis';
import { checkScheduledOptions } from '../../libs/lockwarden/src/core/schedule/scheduled-options';
import { everySchedule } from '../../libs/lockwarden/src/core/schedule/tick-schedule';
import { engineFactory } from '../harness/engines';
import { expectServedAfterFailover } from '../harness/shard-failover';

/** The engine on a 3-master Redis Cluster: slots, sharded pub/sub and per-node renewal batches. */
const nodes = clusterForFile({ masters: 3 });
const worker = workersForFile();
const { engine, pair } = engineFactory(nodes.where, 'cl');

/** The master serving `key` ("host:port"), asked of Redis itself. */
async function nodeOf(key: string): Promise<string> {
  const slot = Number(await nodes.admin.cluster('KEYSLOT', key));
  const range = (await nodes.admin.cluster('SLOTS')).find(([from, to]) => slot >= from && slot <= to)!;
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
    await nodes.admin.get(`probe:${a}${b}${c}`);
    this.inside--;
  }
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
          await nodes.admin.get(`${lock.key}-probe`);
          inside.set(lock.key, n - 1);
        }),
      ),
    );
    expect(overlap).toBe(0);
  });

  it('wakes waiters through sharded pub/sub, and fair waiters in order', async () => {
    const events = new EventLog();
    const [a, b] = pair({}, events);
    const holder = await a.acquire('wake', { leaseMs: 600_000, renew: false, fair: true });
    const order = await grantOrder(events, holder, [b, a], 3, { fair: true, waitMs: 600_000 });
    expect(order).toEqual([0, 1, 2]);
  });

  it('hands a released lock off to a waiter of its own engine first, then to another engine through its inbox (sharded)', async () => {
    const events = new EventLog();
    // Places renewed every 3 minutes: only the hand-off message can let the other engine in.
    const [a, b] = pair({ placeMs: 600_000 }, events);
    const holder = await a.acquire('pass', { leaseMs: 600_000, renew: false });
    const order: string[] = [];
    // Boxed: an async function returning the promise itself would wait for it.
    const wait = async (e: LockEngine, name: string): Promise<{ done: Promise<void> }> => {
      const parked = events.next({ type: 'waiting', key: 'pass' });
      const done = e.acquire('pass', { waitMs: 600_000 }).then(async (lock) => {
        order.push(name);
        await lock.release();
      });
      await parked;
      return { done };
    };
    const other = await wait(b, 'other engine');
    while ((await a.inspect('pass')).waiters < 1) await new Promise((r) => setTimeout(r, 5));
    const own = await wait(a, 'own engine');
    while ((await a.inspect('pass')).waiters < 2) await new Promise((r) => setTimeout(r, 5));
    await holder.release();
    await Promise.all([other.done, own.done]);
    expect(order).toEqual(['own engine', 'other engine']);
    expect(events.count({ type: 'acquired', key: 'pass', handedOff: true })).toBe(2);
  });

  it('renews locks on every node in per-slot batches, and notices a deleted key', async () => {
    const events = new EventLog();
    const e = engine({ keyPrefix: uniquePrefix('clrenew'), leaseMs: 6_000 }, events);
    const locks = await Promise.all(Array.from({ length: 600 }, (_, i) => e.acquire(`r${i}`)));
    await events.next({ type: 'renewed' }, 1_800); // three rounds of all 600
    expect(locks.every((l) => l.isHeld())).toBe(true);
    await nodes.admin.del(`${e.options.keyPrefix}{r7}`);
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
          redis: { cluster: nodes.cluster.startupNodes },
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
    const CLUSTER = nodes.cluster.startupNodes.map((n) => `${n.host}:${n.port}`).join(',');
    const workers = ['A', 'B'].map((NAME) => worker('rw-worker', { CLUSTER, PREFIX, FLOWS: '3', OPS: '100', NAME }));
    await Promise.all(workers.map((w) => w.succeeded()));
    const events = await nodes.admin.lrange(`${PREFIX}log`, 0, -1);
    expect(events).toHaveLength(2 * 2 * 300);
    // The releases handed the lock to queued waiters: the path under test ran.
    const handed = workers.map((w) => Number(/^handed (\d+)$/m.exec(w.lines.join('\n'))?.[1] ?? 0));
    expect(handed.reduce((a, b) => a + b)).toBeGreaterThan(0);
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

describe('a locked key whose slot migrates to another master', () => {
  it('keeps the holder, moves its fencing counter, and hands off to the waiters', async () => {
    const keyPrefix = uniquePrefix('clmove');
    const events = new EventLog();
    const [holderEngine, waiterEngine] = [
      engine({ keyPrefix, leaseMs: 4_500 }, events),
      engine({ keyPrefix, leaseMs: 4_500 }, events),
    ];
    const key = 'moving';
    const lockKey = `${keyPrefix}{${key}}`;
    const slot = Number(await nodes.admin.cluster('KEYSLOT', lockKey));
    const holder = await holderEngine.acquire(key);
    const order: number[] = [];
    let inside = 0;
    let overlap = 0;
    const parked = events.next({ type: 'waiting', key }, 2);
    const waiters = [0, 1].map(() =>
      waiterEngine.withLock(
        key,
        async (lock) => {
          if (++inside > 1) overlap++;
          order.push(await lock.fencingToken());
          await nodes.admin.get(`${keyPrefix}probe`);
          inside--;
        },
        { waitMs: 60_000 },
      ),
    );
    await parked;
    const masters = await nodes.cluster.masters();
    const owner = masters.find((m) => m.slots.some(([a, b]) => slot >= a && slot <= b))!;
    const target = masters.find((m) => m.port !== owner.port)!;
    // Renewals keep going while the slot is half moved (ASK) and after it has moved (MOVED);
    // a loss meanwhile fails the test with what happened (renewals()), rather than hanging it.
    await nodes.cluster.migrateSlot(slot, target.port, () => events.renewals(key, 1));
    await events.renewals(key, 1);
    expect(holder.isHeld()).toBe(true);
    expect(holder.signal.aborted).toBe(false);
    expect(await nodeOf(lockKey)).toBe(`127.0.0.1:${target.port}`);
    const holderToken = await holder.fencingToken();
    expect(await holder.release()).toBe(true);
    await Promise.all(waiters);
    expect(overlap).toBe(0);
    // The fencing counter moved with the slot: tokens keep rising.
    expect(order).toHaveLength(2);
    expect(order[0]).toBeGreaterThan(holderToken);
    expect(order[1]).toBeGreaterThan(order[0]);
  });
});

describe('a Cluster shard failover (3 masters + 3 replicas)', () => {
  it('keeps serving locks on the failed shard once its replica is promoted', async () => {
    const replicated = await RedisCluster.start({ masters: 3, replicas: 1 });
    const e = new LockEngine({
      redis: { cluster: replicated.startupNodes },
      keyPrefix: uniquePrefix('clfail'),
      leaseMs: 3_000,
    });
    try {
      await expectServedAfterFailover(replicated, e);
    } finally {
      await e.close();
      await replicated.stop();
    }
  }, 90_000);
});

describe('scheduled jobs on the cluster', () => {
  it('decide each tick once, with every tick key in the job lock slot', async () => {
    const keyPrefix = uniquePrefix('cluster-ticks');
    const events = new EventLog();
    const options = checkScheduledOptions({}, 'test');
    const [a, b] = [engine({ keyPrefix }, events), engine({ keyPrefix })];
    const jobA = a.scheduledJob('nightly', everySchedule(60_000), options);
    const jobB = b.scheduledJob('nightly', everySchedule(60_000), options);
    const inside = gate();
    const first = jobA.runTick(120_000, async () => {
      await inside.reached();
      return 'ran';
    });
    await inside.entered;
    await expect(jobB.runTick(120_000, async () => 'again')).resolves.toBeUndefined(); // same tick
    await expect(jobB.runTick(180_000, async () => 'next')).resolves.toBeUndefined(); // overrun
    inside.open();
    await expect(first).resolves.toBe('ran');
    await expect(jobB.runTick(240_000, async () => 'later')).resolves.toBe('later');
    expect(events.count({ type: 'overrun', key: 'nightly' })).toBe(0); // reported by b, not a
    const slot = await nodes.admin.cluster('KEYSLOT', `${keyPrefix}{nightly}`);
    for (const at of [120_000, 180_000, 240_000]) {
      expect(await nodes.admin.cluster('KEYSLOT', `${keyPrefix}{nightly}:tick:${at}`)).toBe(slot);
      expect(await nodes.admin.get(`${keyPrefix}{nightly}:tick:${at}`)).toMatch(/^(done|overrun)\|/);
    }
    expect(await nodes.admin.exists(`${keyPrefix}{nightly}:run`)).toBe(0);
  });
});
