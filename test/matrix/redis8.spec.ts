// What is Redis 8's own, in the Redis 8.6 leg of `npm run test:matrix` (tools/matrix-legs.cjs),
// which also runs the behaviour, history and fault files on Redis 8.6: that the leg's servers
// really are 8.6, and that a release nobody waits for is the server's `DELEX key IFEQ value`,
// counted per master, through each client, on one server and on a 3-master Cluster.
import { spawnSync } from 'node:child_process';
import { GlideClusterClient, Logger } from '@valkey/valkey-glide';
import { Redis } from 'ioredis';
import { LockEngine } from 'lockwarden/core';
import { clientMaker } from '../harness/clients';
import type { AnyClientKind, Where } from '../harness/clients';
import { callsOf } from '../harness/command-stats';
import { closeNow } from '../harness/engines';
import { documentedAclRule } from '../harness/acl-rule';
import { Lines } from '../harness/lines';
import { redisForFile, uniquePrefix } from '../harness/redis';
import { clusterForFile } from '../harness/redis-cluster';
import { defaultServer } from '../harness/redis-process';

const KINDS: readonly AnyClientKind[] = ['ioredis', 'node-redis', 'glide'];

/** Lock cycles per master, each released by DELEX alone (nobody waits). */
const CYCLES = 10;

// Outside the leg the harness's plain Redis is Redis 7, and every count below would be wrong
// for a reason that says nothing about Redis 8: say so at once instead.
const version = spawnSync(defaultServer, ['--version'], { encoding: 'utf8' }).stdout ?? '';
if (!/ v=8\.6\./.test(version)) {
  throw new Error(
    `test/matrix/redis8.spec.ts runs in the Redis 8.6 leg of npm run test:matrix (LOCKWARDEN_TEST_SERVER), not on ${defaultServer}: ${version.trim()}`,
  );
}

// GLIDE's Rust core logs a MOVED reply or a reconnection as a warning; none is the test's point.
beforeAll(() => Logger.setLoggerConfig('error'));

const server = redisForFile({ own: true });
const nodes = clusterForFile({ masters: 3 });

/** Scripts the server ran, by its own count. */
const scriptCalls = (admin: Redis): Promise<number> => callsOf(admin, 'evalsha', 'eval');

it('puts Redis 8.6, which has DELEX, wherever a test asks for plain Redis: one server and each Cluster node', async () => {
  const admins = [server.admin, ...nodes.cluster.nodes.map((n) => new Redis(n.port, n.host))];
  try {
    for (const admin of admins) {
      expect(await admin.info('server')).toMatch(/^redis_version:8\.6\./m);
      const [info] = (await admin.call('COMMAND', 'INFO', 'DELEX')) as unknown[];
      expect(info).not.toBeNull();
    }
  } finally {
    for (const admin of admins.slice(1)) admin.disconnect();
  }
});

/**
 * Engines through `kind`, each on a client of its own (as processes would be), closed with
 * their clients after each test. `where` is read inside the test, once the servers are up.
 */
function enginesThrough(kind: AnyClientKind, where: () => Where) {
  const clients = clientMaker(kind);
  const glideClusters: GlideClusterClient[] = [];
  const engines: LockEngine[] = [];
  afterEach(async () => {
    await Promise.all(engines.splice(0).map(closeNow));
    await clients.closeClients();
    for (const c of glideClusters.splice(0)) c.close();
  });
  /**
   * An engine, once it has checked its Redis user's permissions: that check is one script call
   * of its own, made when it connects, and a count of the scripts a lock ran must not take it in.
   */
  return async (keyPrefix: string): Promise<LockEngine> => {
    const w = where();
    let topology;
    if (kind === 'glide' && typeof w !== 'string') {
      // clientMaker makes GLIDE's one-server client only.
      const client = await GlideClusterClient.createClient({ addresses: w.cluster, requestTimeout: 10_000 });
      glideClusters.push(client);
      topology = { client };
    } else {
      topology = await clients.connect(w);
    }
    let checked: () => void = () => undefined;
    const aclChecked = new Promise<void>((resolve) => (checked = resolve));
    const engine = new LockEngine(
      { ...topology, keyPrefix },
      {
        warn: () => undefined,
        debug: (message) => {
          if (/may run every command Lockwarden needs/.test(message)) checked();
        },
      },
    );
    engines.push(engine);
    await aclChecked;
    return engine;
  };
}

/**
 * Cycles `key` until the server has run a DELEX: the engine looks the command up once
 * connected, off the way of any lock, and releases with the script until the answer is in.
 */
async function untilNative(engine: LockEngine, key: string, delexCalls: () => Promise<number>): Promise<void> {
  for (let i = 0; i < 1_000 && (await delexCalls()) === 0; i++) await (await engine.acquire(key)).release();
  expect(await delexCalls()).toBeGreaterThan(0);
}

describe.each(KINDS)('one Redis 8.6 server, through %s', (kind) => {
  const engine = enginesThrough(kind, () => server.redis.url);

  it('releases each lock nobody waited for with DELEX … IFEQ, and runs no script for the whole cycle', async () => {
    const e = await engine(uniquePrefix(`r8-native-${kind}`));
    const delex = (): Promise<number> => callsOf(server.admin, 'delex');
    await untilNative(e, 'warm', delex);
    const [scripts, deletes] = [await scriptCalls(server.admin), await delex()];
    for (let i = 0; i < CYCLES; i++) expect(await (await e.acquire(`k${i % 3}`)).release()).toBe(true);
    expect((await delex()) - deletes).toBe(CYCLES);
    expect(await scriptCalls(server.admin)).toBe(scripts);
    // A lock whose token was read (its value then carries it) goes the same way.
    const lock = await e.acquire('fenced');
    expect(await lock.fencingToken()).toBeGreaterThan(0);
    const before = await delex();
    expect(await lock.release()).toBe(true);
    expect((await delex()) - before).toBe(1);
    expect(await server.admin.exists(`${e.options.keyPrefix}{fenced}`)).toBe(0);
  });

  it('hands a lock someone waits for to the waiter: DELEX refuses the marked value, and the script takes over', async () => {
    const keyPrefix = uniquePrefix(`r8-waited-${kind}`);
    const [a, b] = [await engine(keyPrefix), await engine(keyPrefix)];
    const delex = (): Promise<number> => callsOf(server.admin, 'delex');
    await untilNative(a, 'warm', delex);
    const held = await a.acquire('k');
    const waiting = b.acquire('k', { waitMs: 30_000 });
    // The waiter's attempt marks the value (others wait): the compare-and-delete of the unmarked value must fail.
    while (!(await server.admin.get(`${keyPrefix}{k}`))?.endsWith('|w')) await new Promise((r) => setImmediate(r));
    const [scripts, deletes] = [await scriptCalls(server.admin), await delex()];
    await held.release();
    expect((await delex()) - deletes).toBe(1);
    expect(await scriptCalls(server.admin)).toBeGreaterThan(scripts);
    const got = await waiting;
    expect(await got.fencingToken()).toBeGreaterThan(0);
    expect(await got.release()).toBe(true);
  });
});

describe.each(KINDS)('a 3-master Redis 8.6 Cluster, through %s', (kind) => {
  const engine = enginesThrough(kind, nodes.where);

  it("releases on each master with that master's DELEX … IFEQ, and waiters still get their locks", async () => {
    const keyPrefix = uniquePrefix(`r8-cluster-${kind}`);
    const [a, b] = [await engine(keyPrefix), await engine(keyPrefix)];
    const masters = await nodes.cluster.masters();
    const admins = masters.map((m) => new Redis(m.port, '127.0.0.1'));
    const perMaster = (command: string, ...more: string[]): Promise<number[]> =>
      Promise.all(admins.map((admin) => callsOf(admin, command, ...more)));
    const minus = (after: number[], before: number[]): number[] => after.map((n, i) => n - before[i]);
    try {
      // A key on each master's slots.
      const keys = await Promise.all(masters.map((m) => nodes.cluster.keyOn(m, keyPrefix, 'k')));
      await untilNative(a, keys[0], async () => (await perMaster('delex')).reduce((x, y) => x + y, 0));
      const [deletes, scripts] = [await perMaster('delex'), await perMaster('evalsha', 'eval')];
      for (const key of keys)
        for (let i = 0; i < CYCLES; i++) expect(await (await a.acquire(key)).release()).toBe(true);
      expect(minus(await perMaster('delex'), deletes)).toEqual(masters.map(() => CYCLES));
      expect(minus(await perMaster('evalsha', 'eval'), scripts)).toEqual(masters.map(() => 0));
      // Contended, across two engines: each master's DELEX refuses the marked value once, and
      // the script hands the lock to the waiter, whose own release, of a lock handed to it with
      // the mark, goes to the script directly.
      const refused = await perMaster('delex');
      for (const key of keys) {
        const held = await a.acquire(key);
        const waiting = b.acquire(key, { waitMs: 30_000 });
        while (!(await nodes.admin.get(`${keyPrefix}{${key}}`))?.endsWith('|w')) {
          await new Promise((r) => setImmediate(r));
        }
        await held.release();
        expect(await (await waiting).release()).toBe(true);
      }
      expect(minus(await perMaster('delex'), refused)).toEqual(masters.map(() => 1));
    } finally {
      for (const admin of admins) admin.disconnect();
    }
  });
});

it('releases as the documented least-privilege user, which may not run DELEX: by the script, warning of nothing', async () => {
  // The rule of docs/configuration.md, which names no DELEX (Redis 7 refuses a rule that does):
  // a user given it on Redis 8.6 must still release, by the script it may run.
  const password = 'redis8-acl-test';
  await server.admin.call('ACL', 'SETUSER', 'lockwarden-r8', 'reset', ...documentedAclRule(password));
  const url = new URL(server.redis.url);
  url.username = 'lockwarden-r8';
  url.password = password;
  const lines = new Lines();
  // Under the rule's own prefix (lock:), which its key and channel patterns allow.
  const engine = new LockEngine({ redis: url.toString(), keyPrefix: `lock:${uniquePrefix('r8-acl')}` }, lines);
  try {
    // The connect-time ACL check has looked (and said, below WARN, that releases use the script).
    await lines.until('debug', /may not run DELEX: releases nobody waits for run a script/);
    const before = await callsOf(server.admin, 'evalsha', 'eval');
    const denied = await callsOf(server.admin, 'delex');
    // Until the first release finds DELEX denied (one refusal), then the script from then on.
    for (let i = 0; i < CYCLES; i++) expect(await (await engine.acquire(`k${i}`)).release()).toBe(true);
    expect((await callsOf(server.admin, 'delex')) - denied).toBeLessThanOrEqual(1);
    expect((await callsOf(server.admin, 'evalsha', 'eval')) - before).toBeGreaterThanOrEqual(CYCLES);
    for (let i = 0; i < CYCLES; i++) expect(await server.admin.exists(`${engine.options.keyPrefix}{k${i}}`)).toBe(0);
    expect(lines.of('warn')).toEqual([]);
    expect(lines.of('error')).toEqual([]);
  } finally {
    await engine.close();
    await server.admin.call('ACL', 'DELUSER', 'lockwarden-r8');
  }
});
