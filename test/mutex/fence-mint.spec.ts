import type { Cluster, Redis } from 'ioredis';
import { LockEngine, LockLostError } from 'lockwarden';
import { runWorker } from '../harness/child';
import type { ChildScript } from '../harness/child';
import { RedisCluster } from '../harness/redis-cluster';
import { startRedis, uniquePrefix } from '../harness/redis';
import type { RedisTarget } from '../harness/redis';
import { closeNow } from '../harness/engines';

/**
 * Fencing paid only where it is read: an uncontended mutex grant is one SET NX PX, and the
 * token is minted on first read, only while the reader still holds the lock. What Redis ran
 * is read from the server's own command statistics, not from the library.
 */
let redis: RedisTarget;
let admin: Redis;
const engines: LockEngine[] = [];
const children: ChildScript[] = [];

beforeAll(async () => {
  // A server of its own: its command statistics count this file's engines only.
  redis = await startRedis({ own: true });
  admin = redis.client();
});

afterEach(async () => {
  for (const c of children.splice(0)) c.kill();
  await Promise.all(engines.splice(0).map(closeNow));
});

afterAll(async () => {
  admin.disconnect();
  await redis.stop();
});

function engine(keyPrefix: string): LockEngine {
  const e = new LockEngine({ redis: redis.url, keyPrefix });
  engines.push(e);
  return e;
}

/** Calls per command since the server started, from INFO commandstats. */
async function commandCalls(client: Pick<Redis, 'info'>): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const m of (await client.info('commandstats')).matchAll(/^cmdstat_([\w|]+):calls=(\d+)/gm)) {
    calls.set(m[1], Number(m[2]));
  }
  return calls;
}

/**
 * What ran between two readings, without the INFO calls that took them and the SCRIPT LOADs
 * an engine sends in the background when a connection becomes ready (on Cluster, one per
 * node, possibly after the warm-up call).
 */
/**
 * Commands a client sends for its connection, not for a lock: a ready check (`INFO`, or
 * `CLUSTER INFO` when ioredis connects a Cluster node), script loading, a ping. They arrive
 * whenever the client decides to (re)connect, so counting them would make the count depend
 * on the client's timing rather than on what a lock asks of Redis.
 */
function isHousekeeping(command: string): boolean {
  return /^(info|ping|hello|select|readonly|command|cluster\||client\||script\|)/.test(command);
}

function delta(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, n] of after) {
    const d = n - (before.get(name) ?? 0);
    if (d > 0 && !isHousekeeping(name)) out[name] = d;
  }
  return out;
}

async function serverMicros(client: Pick<Redis, 'time'>): Promise<number> {
  const [s, us] = await client.time();
  return Number(s) * 1_000_000 + Number(us);
}

describe('an uncontended mutex', () => {
  it('is granted by one SET NX PX on never-seen names, touches no counter, and is released by one script', async () => {
    const prefix = uniquePrefix('plain');
    const e = engine(prefix);
    // Warm: the first call of a process loads the scripts and connects.
    await (await e.acquire('warm')).release();
    const before = await commandCalls(admin);
    const n = 20;
    for (let i = 0; i < n; i++) await (await e.acquire(`never-seen:${i}`)).release();
    const ran = delta(before, await commandCalls(admin));
    // Command statistics count a script's own calls too: release.lua's GET and DEL. No INCR,
    // no TIME, no second script: the grant is the SET alone.
    expect(ran).toEqual({ set: n, evalsha: n, get: n, del: n });
    expect(await admin.keys(`${prefix}*`)).toEqual([]);
  });

  it('mints its token on the first read only, above the server clock at the grant, and reads it again for free', async () => {
    const prefix = uniquePrefix('mint');
    const e = engine(prefix);
    await (await e.acquire('warm')).release();
    const clock = await serverMicros(admin);
    const lock = await e.acquire('order:1');
    // No token yet: only the lock's own key exists.
    expect(await admin.keys(`${prefix}{order:1}*`)).toEqual([`${prefix}{order:1}`]);
    const before = await commandCalls(admin);
    const [first, again] = await Promise.all([lock.fencingToken(), lock.fencingToken()]);
    const third = await lock.fencingToken();
    // One script for three reads: fence-mint.lua's GET of the lock and of the counter, TIME,
    // and the SETs of the counter and of the lock's value.
    expect(delta(before, await commandCalls(admin))).toEqual({ evalsha: 1, get: 2, time: 1, set: 2 });
    expect(again).toBe(first);
    expect(third).toBe(first);
    expect(first).toBeGreaterThan(clock);
    // The token is in the lock's value, so inspect() and operators see the holder's own.
    expect((await e.inspect('order:1')).fencingToken).toBe(first);
    await lock.release();
  });

  it('with fenced: true, mints the token with the grant in one script, and the read asks Redis nothing', async () => {
    const prefix = uniquePrefix('fenced');
    const e = engine(prefix);
    await (await e.acquire('warm')).release();
    const clock = await serverMicros(admin);
    const before = await commandCalls(admin);
    const lock = await e.acquire('order:2', { fenced: true });
    // acquire.lua, with its own GET of the lock, the mint (TIME, GET and SET of the counter)
    // and the SET of the lock: no plain SET on the wire.
    expect(delta(before, await commandCalls(admin))).toEqual({ evalsha: 1, get: 2, time: 1, set: 2 });
    const afterGrant = await commandCalls(admin);
    const token = await lock.fencingToken();
    expect(delta(afterGrant, await commandCalls(admin))).toEqual({});
    expect(token).toBeGreaterThan(clock);
    expect(await admin.get(`${prefix}{order:2}`)).toContain(`|${token}|`);
    await lock.release();
    await expect(e.acquire('k', { fenced: 'yes' as unknown as boolean })).rejects.toThrow(/fenced must be a boolean/);
  });

  it('gives a later reader a higher token, across a holder that never read one', async () => {
    const e = engine(uniquePrefix('order'));
    const a = await e.acquire('k');
    const t1 = await a.fencingToken();
    await a.release();
    await (await e.acquire('k')).release();
    const c = await e.acquire('k');
    const t3 = await c.fencingToken();
    await c.release();
    expect(t3).toBeGreaterThan(t1);
  });

  it('shares the outer hold’s token with a reentrant hold', async () => {
    const e = engine(uniquePrefix('reenter'));
    const [outer, inner] = await e.withLock('k', async (lock) => {
      const innerToken = await e.withLock('k', (again) => again.fencingToken());
      return [await lock.fencingToken(), innerToken];
    });
    expect(inner).toBe(outer);
  });
});

describe('a holder that lost its lock', () => {
  it('cannot mint once the key was taken away: the read rejects, mints nothing, and aborts the signal', async () => {
    const prefix = uniquePrefix('taken');
    const e = engine(prefix);
    const lock = await e.acquire('k');
    expect(lock.signal.aborted).toBe(false);
    await admin.del(`${prefix}{k}`);
    await expect(lock.fencingToken()).rejects.toBeInstanceOf(LockLostError);
    expect(await admin.exists(`${prefix}{k}:fence`)).toBe(0);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(lock.isHeld()).toBe(false);
    // And a second read rejects the same way, without asking Redis.
    const before = await commandCalls(admin);
    await expect(lock.fencingToken()).rejects.toBeInstanceOf(LockLostError);
    expect(delta(before, await commandCalls(admin))).toEqual({});
  });

  it('rejects a read after its own release', async () => {
    const e = engine(uniquePrefix('released'));
    const lock = await e.acquire('k');
    await lock.release();
    await expect(lock.fencingToken()).rejects.toBeInstanceOf(LockLostError);
  });

  it('cannot mint after a pause past its lease: only the next holder’s token is handed out', async () => {
    const prefix = uniquePrefix('paused');
    const worker = runWorker('fence-worker', { REDIS: redis.url, PREFIX: prefix, KEY: 'k', LEASE_MS: '1000' });
    children.push(worker);
    await worker.waitFor(/^held$/);
    // A long GC pause or a stopped VM: the worker's watchdog cannot renew.
    worker.kill('SIGSTOP');
    const e = engine(prefix);
    // Waits for the worker's lease to lapse in Redis; then this engine holds the lock.
    const next = await e.acquire('k', { waitMs: 30_000 });
    const nextToken = await next.fencingToken();
    worker.kill('SIGCONT');
    await admin.rpush(`${prefix}go`, 'read');
    const [, outcome] = await worker.waitFor(/^(token \d+|rejected \w+)$/);
    expect(outcome).toBe('rejected LockLostError');
    // Nothing was minted for the paused holder: the counter holds the new holder's token.
    expect(Number(await admin.get(`${prefix}{k}:fence`))).toBe(nextToken);
    expect(await next.fencingToken()).toBe(nextToken);
    await next.release();
    expect(await worker.exited).toBe(0);
  });
});

describe('on Cluster', () => {
  let cluster: RedisCluster;
  let nodes: Cluster;

  beforeAll(async () => {
    cluster = await RedisCluster.start({ masters: 3 });
    nodes = cluster.client();
  }, 60_000);

  afterAll(async () => {
    nodes.disconnect();
    await cluster.stop();
  });

  async function clusterCalls(): Promise<Map<string, number>> {
    const sum = new Map<string, number>();
    for (const node of nodes.nodes('master')) {
      for (const [name, n] of await commandCalls(node)) sum.set(name, (sum.get(name) ?? 0) + n);
    }
    return sum;
  }

  it('an uncontended grant is one SET NX PX too, and a read mints a token that rises', async () => {
    const e = new LockEngine({ redis: { cluster: cluster.startupNodes }, keyPrefix: uniquePrefix('cluster') });
    engines.push(e);
    await (await e.acquire('warm')).release();
    const before = await clusterCalls();
    const n = 12;
    for (let i = 0; i < n; i++) await (await e.acquire(`never-seen:${i}`)).release();
    const ran = delta(before, await clusterCalls());
    expect(ran).toEqual({ set: n, evalsha: n, get: n, del: n });
    const a = await e.acquire('k');
    const t1 = await a.fencingToken();
    await a.release();
    const b = await e.acquire('k');
    expect(await b.fencingToken()).toBeGreaterThan(t1);
    await b.release();
  });
});
