import type { Redis } from 'ioredis';
import { LockLostError } from 'lockwarden/errors';
import type { LockEngine } from 'lockwarden/core';
import { workersForFile } from '../harness/child';
import { commandCalls } from '../harness/command-stats';
import { engineFactory } from '../harness/engines';
import { clusterForFile } from '../harness/redis-cluster';
import { redisForFile, uniquePrefix } from '../harness/redis';

/**
 * Fencing paid only where it is read: an uncontended mutex grant is one SET NX PX, and the
 * token is minted on first read, only while the reader still holds the lock. What Redis ran
 * is read from the server's own command statistics, not from the library.
 */
// A server of its own: its command statistics count this file's engines only.
const server = redisForFile({ own: true });
const worker = workersForFile();
const factory = engineFactory(() => server.redis.url, 'fence-mint');
const engine = (keyPrefix: string): LockEngine => factory.engine({ keyPrefix });

/**
 * Commands a client sends for its connection, not for a lock: a ready check (`INFO`, or
 * `CLUSTER INFO` when ioredis connects a Cluster node), script loading, a ping. They arrive
 * whenever the client decides to (re)connect, so counting them would make the count depend
 * on the client's timing rather than on what a lock asks of Redis.
 */
function isHousekeeping(command: string): boolean {
  return /^(info|ping|hello|select|readonly|command|cluster\||client\||script\|)/.test(command);
}

/**
 * What ran between two readings, without the commands a client sends for its connection
 * (isHousekeeping): the INFO calls that took them, and the SCRIPT LOADs an engine sends in the
 * background when a connection becomes ready (on Cluster, one per node, possibly after the
 * warm-up call).
 */
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
    const before = await commandCalls(server.admin);
    const n = 20;
    for (let i = 0; i < n; i++) await (await e.acquire(`never-seen:${i}`)).release();
    const ran = delta(before, await commandCalls(server.admin));
    // Command statistics count a script's own calls too: release.lua's GET and DEL. No INCR,
    // no TIME, no second script: the grant is the SET alone.
    expect(ran).toEqual({ set: n, evalsha: n, get: n, del: n });
    expect(await server.admin.keys(`${prefix}*`)).toEqual([]);
  });

  it('mints its token on the first read only, above the server clock at the grant, and reads it again for free', async () => {
    const prefix = uniquePrefix('mint');
    const e = engine(prefix);
    await (await e.acquire('warm')).release();
    const clock = await serverMicros(server.admin);
    const lock = await e.acquire('order:1');
    // No token yet: only the lock's own key exists.
    expect(await server.admin.keys(`${prefix}{order:1}*`)).toEqual([`${prefix}{order:1}`]);
    const before = await commandCalls(server.admin);
    const [first, again] = await Promise.all([lock.fencingToken(), lock.fencingToken()]);
    const third = await lock.fencingToken();
    // One script for three reads: fence-mint.lua's GET of the lock and of the counter, TIME,
    // and the SETs of the counter and of the lock's value.
    expect(delta(before, await commandCalls(server.admin))).toEqual({ evalsha: 1, get: 2, time: 1, set: 2 });
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
    const clock = await serverMicros(server.admin);
    const before = await commandCalls(server.admin);
    const lock = await e.acquire('order:2', { fenced: true });
    // acquire.lua, with its own GET of the lock, the mint (TIME, GET and SET of the counter)
    // and the SET of the lock: no plain SET on the wire.
    expect(delta(before, await commandCalls(server.admin))).toEqual({ evalsha: 1, get: 2, time: 1, set: 2 });
    const afterGrant = await commandCalls(server.admin);
    const token = await lock.fencingToken();
    expect(delta(afterGrant, await commandCalls(server.admin))).toEqual({});
    expect(token).toBeGreaterThan(clock);
    expect(await server.admin.get(`${prefix}{order:2}`)).toContain(`|${token}|`);
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
});

describe('a holder that lost its lock', () => {
  it('cannot mint once the key was taken away: the read rejects, mints nothing, and aborts the signal', async () => {
    const prefix = uniquePrefix('taken');
    const e = engine(prefix);
    const lock = await e.acquire('k');
    expect(lock.signal.aborted).toBe(false);
    await server.admin.del(`${prefix}{k}`);
    await expect(lock.fencingToken()).rejects.toBeInstanceOf(LockLostError);
    expect(await server.admin.exists(`${prefix}{k}:fence`)).toBe(0);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(lock.isHeld()).toBe(false);
    // And a second read rejects the same way, without asking Redis.
    const before = await commandCalls(server.admin);
    await expect(lock.fencingToken()).rejects.toBeInstanceOf(LockLostError);
    expect(delta(before, await commandCalls(server.admin))).toEqual({});
  });

  it('rejects a read after its own release', async () => {
    const e = engine(uniquePrefix('released'));
    const lock = await e.acquire('k');
    await lock.release();
    await expect(lock.fencingToken()).rejects.toBeInstanceOf(LockLostError);
  });

  it('cannot mint after a pause past its lease: only the next holder’s token is handed out', async () => {
    const prefix = uniquePrefix('paused');
    const holder = worker('fence-worker', { REDIS: server.redis.url, PREFIX: prefix, KEY: 'k', LEASE_MS: '1000' });
    await holder.waitFor(/^held$/);
    // A long GC pause or a stopped VM: the worker's watchdog cannot renew.
    holder.kill('SIGSTOP');
    const e = engine(prefix);
    // Waits for the worker's lease to lapse in Redis; then this engine holds the lock.
    const next = await e.acquire('k', { waitMs: 30_000 });
    const nextToken = await next.fencingToken();
    holder.kill('SIGCONT');
    await server.admin.rpush(`${prefix}go`, 'read');
    const [, outcome] = await holder.waitFor(/^(token \d+|rejected \w+)$/);
    expect(outcome).toBe('rejected LockLostError');
    // Nothing was minted for the paused holder: the counter holds the new holder's token.
    expect(Number(await server.admin.get(`${prefix}{k}:fence`))).toBe(nextToken);
    expect(await next.fencingToken()).toBe(nextToken);
    await next.release();
    expect(await holder.exited).toBe(0);
  });
});

describe('on Cluster', () => {
  const nodes = clusterForFile({ masters: 3 });

  async function clusterCalls(): Promise<Map<string, number>> {
    const sum = new Map<string, number>();
    for (const node of nodes.admin.nodes('master')) {
      for (const [name, n] of await commandCalls(node)) sum.set(name, (sum.get(name) ?? 0) + n);
    }
    return sum;
  }

  it('an uncontended grant is one SET NX PX too, and a read mints a token that rises', async () => {
    const e = factory.engine({ redis: nodes.where(), keyPrefix: uniquePrefix('cluster') });
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
