import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { GlideClient, Logger } from '@valkey/valkey-glide';
import { LeadershipRegistry, LockEngine } from 'lockwarden/core';
import { LockBackendError } from 'lockwarden/errors';
import type { LockEngineOptions } from 'lockwarden/core';
import { createClient } from 'redis';
import { documentedAclRule } from '../harness/acl-rule';
import { ChildScript, TS_ARGS } from '../harness/child';
import { closeNow } from '../harness/engines';
import { EventLog } from '../harness/event-log';
import { Lines } from '../harness/lines';
import { redisForFile, uniquePrefix } from '../harness/redis';
import { testTls } from '../harness/tls';
import { checkScheduledOptions } from '../../libs/lockwarden/src/core/schedule/scheduled-options';
import { everySchedule } from '../../libs/lockwarden/src/core/schedule/tick-schedule';

/**
 * The TLS leg of npm run test:matrix (LOCKWARDEN_TEST_TLS=1: the harness's servers listen for
 * TLS alone, with a certificate the run's throwaway CA signed). Each client is handed that CA
 * in its own options, as docs/configuration.md shows: nothing makes this process trust it
 * otherwise, so a client without it is turned away (the certificate test below proves that).
 * The behaviour suite and a history check run over TLS in the same leg, from their own files.
 */
if (!testTls) throw new Error('test/matrix/tls.spec.ts runs in the TLS leg only: npm run test:matrix');
const ca = testTls.ca;
// Its own server: the tests add ACL users to it.
const server = redisForFile({ own: true });
const PASSWORD = 'tls-acl-test';

/** The server's rediss:// URL, as `user` when one is named. */
function urlAs(user?: string): string {
  const url = new URL(server.redis.url);
  if (user) {
    url.username = user;
    url.password = PASSWORD;
  }
  return url.toString();
}

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function engine(options: LockEngineOptions, lines = new Lines(), events?: EventLog): LockEngine {
  const e = new LockEngine({ metrics: false, onEvent: events?.listener, ...options }, lines);
  cleanups.push(() => closeNow(e));
  return e;
}

it('trusts the CA only where it is given: NODE_EXTRA_CA_CERTS does not hold it', () => {
  // A machine may set it (to its system bundle): what matters is that the test CA is not in it,
  // so every TLS client below trusts the CA because its options name it, and one that is not
  // given it fails (next test). The no-INFO worker runs with NODE_EXTRA_CA_CERTS unset.
  const extra = process.env.NODE_EXTRA_CA_CERTS;
  if (extra) expect(readFileSync(extra, 'utf8')).not.toContain(ca.toString('utf8').trim());
  expect(server.redis.url).toMatch(/^rediss:\/\//);
});

describe('a rediss:// URL without the CA', () => {
  it('fails an acquire with LockBackendError naming the certificate problem, as health() does', async () => {
    const lines = new Lines();
    const e = engine({ redis: server.redis.url, keyPrefix: uniquePrefix('no-ca') }, lines);
    const err = await e.acquire('order:1', { waitMs: 0 }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(LockBackendError);
    const certificate = /self-signed certificate in certificate chain|unable to verify the first certificate/;
    expect((err as Error).message).toMatch(certificate);
    expect((err as Error).message).toContain('tls.ca');
    expect((err as Error).message).not.toContain('the connection to Redis is down');
    const health = await e.health();
    expect(health.reachable).toBe(false);
    expect(health.error).toMatch(certificate);
    expect(lines.of('warn', certificate)).toHaveLength(1);
  });
});

/**
 * What an application does with locks, every kind, on two engines (two processes): the
 * commands of the documented rule, each used. Returns nothing; fails on the first refusal.
 */
async function everyKindOfLock(a: LockEngine, b: LockEngine, events: EventLog): Promise<void> {
  // Uncontended, then contended: b waits, and a's release hands it the lock.
  const held = await a.acquire('order:1');
  const waiting = events.next({ type: 'waiting', key: 'order:1' });
  const next = b.acquire('order:1', { waitMs: 30_000 });
  await waiting;
  const handedOff = events.next({ type: 'acquired', key: 'order:1' });
  const firstToken = await held.fencingToken();
  expect(await held.release()).toBe(true);
  const second = await next;
  expect(await handedOff).toMatchObject({ handedOff: true });
  expect(await second.fencingToken()).toBeGreaterThan(firstToken);
  await second.extend(60_000);
  expect(await second.release()).toBe(true);

  const pool = a.semaphore('pool', { limit: 1 });
  const permit = await pool.acquire();
  const other = b.semaphore('pool', { limit: 1 }).acquire({ waitMs: 30_000 });
  expect(await permit.release()).toBe(true);
  expect(await (await other).release()).toBe(true);

  const reader = await a.acquireRead('doc');
  const writer = b.acquireWrite('doc', { waitMs: 30_000 });
  await reader.release();
  expect(await (await writer).release()).toBe(true);

  const job = a.scheduledJob('nightly', everySchedule(3_600_000), checkScheduledOptions({}, 'test'));
  expect(await job.run(async () => 'ran')).toBe('ran');

  const registry = new LeadershipRegistry(a);
  cleanups.push(() => registry.close());
  const leadership = registry.leadership('leader');
  await leadership.campaign();
  expect(leadership.isLeader()).toBe(true);
  await leadership.resign();

  for (const e of [a, b]) {
    const health = await e.health();
    expect(health).toMatchObject({ reachable: true, scriptsLoaded: true });
    expect(health.error).toBeUndefined();
  }
}

/** The three clients, each given the CA and the ACL user in its own options (docs/configuration.md, "TLS"). */
const CLIENTS: [string, (user: string) => Promise<Pick<LockEngineOptions, 'redis' | 'client'>>][] = [
  [
    "ioredis, from Lockwarden's options (redis: { url, tls: { ca } })",
    async (user) => ({ redis: { url: urlAs(user), tls: { ca } } }),
  ],
  [
    'node-redis, given as client',
    async (user) => {
      const client = createClient({ url: urlAs(user), socket: { tls: true, ca } });
      client.on('error', () => undefined);
      await client.connect();
      cleanups.push(() => client.isOpen && client.destroy());
      return { client };
    },
  ],
  [
    'Valkey GLIDE, given as client',
    async (user) => {
      Logger.setLoggerConfig('error');
      const url = new URL(server.redis.url);
      const client = await GlideClient.createClient({
        addresses: [{ host: url.hostname, port: Number(url.port) }],
        credentials: { username: user, password: PASSWORD },
        useTLS: true,
        advancedConfiguration: { tlsAdvancedConfiguration: { rootCertificates: ca } },
        requestTimeout: 10_000,
      });
      cleanups.push(() => client.close());
      return { client };
    },
  ],
];

describe.each(CLIENTS)('over TLS, as an ACL user with exactly the documented rule, through %s', (_name, connect) => {
  it('takes, waits for, hands off, fences and releases every kind of lock, with nothing refused', async () => {
    const user = `lw-${uniquePrefix('u').replace(/\W/g, '')}`;
    await server.admin.call('ACL', 'SETUSER', user, 'reset', ...documentedAclRule(PASSWORD));
    // Under the rule's ~lock:* and &lock:*.
    const keyPrefix = `lock:${uniquePrefix('tls-acl')}`;
    const lines = new Lines();
    const events = new EventLog();
    const a = engine({ ...(await connect(user)), keyPrefix }, lines, events);
    const b = engine({ ...(await connect(user)), keyPrefix }, lines, events);
    await everyKindOfLock(a, b, events);
    // The check at connect found nothing missing, and nothing was refused or unreachable.
    await lines.until('debug', /may run every command Lockwarden needs/, 2);
    expect(lines.of('warn')).toEqual([]);
    expect(lines.of('error')).toEqual([]);
    expect(lines.all.filter((l) => /NOPERM|refused|may not/i.test(l.text))).toEqual([]);
  });
});

describe('over TLS, the documented rule less one command', () => {
  it('is named: at connect, and by the acquire it stops', async () => {
    const user = 'lw-no-time';
    const rule = documentedAclRule(PASSWORD).filter((part) => part !== '+time');
    await server.admin.call('ACL', 'SETUSER', user, 'reset', ...rule);
    const keyPrefix = `lock:${uniquePrefix('tls-less')}`;
    const lines = new Lines();
    const a = engine({ redis: { url: urlAs(user), tls: { ca } }, keyPrefix }, lines);
    const b = engine({ redis: { url: urlAs(user), tls: { ca } }, keyPrefix }, lines);
    await lines.until('warn', /may not run TIME\b/);
    await a.acquire('order:1');
    const err = await b.acquire('order:1', { waitMs: 600_000 }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(LockBackendError);
    expect((err as Error).message).toContain('Redis refused the command TIME');
  });
});

/**
 * Runs test/workers/quiet-acl-worker.ts, with stdin to tell it when to lock again, and without
 * NODE_EXTRA_CA_CERTS: the CA it trusts is the one in Lockwarden's options alone.
 */
function quietWorker(env: Record<string, string>): ChildScript {
  const { NODE_EXTRA_CA_CERTS: _extra, ...inherited } = process.env;
  const child = spawn(process.execPath, [...TS_ARGS, resolve('test', 'workers', 'quiet-acl-worker.ts')], {
    env: { ...inherited, TS_NODE_PROJECT: resolve('tsconfig.json'), ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const script = new ChildScript(child);
  cleanups.push(() => script.exitStatus === undefined && script.kill());
  return script;
}

/** The ids of the connections `user` has open, from CLIENT LIST. */
async function connectionsOf(user: string): Promise<number[]> {
  const list = String(await server.admin.call('CLIENT', 'LIST'));
  return list
    .split('\n')
    .filter((line) => line.includes(` user=${user} `))
    .map((line) => Number(/\bid=(\d+)/.exec(line)?.[1]));
}

describe('an ACL user without INFO', () => {
  const user = 'lw-no-info';
  beforeEach(async () => {
    const rule = documentedAclRule(PASSWORD).filter((part) => part !== '+info');
    await server.admin.call('ACL', 'SETUSER', user, 'reset', ...rule);
  });

  /** Locks, has its connections cut, locks again through new ones; gives what the process printed. */
  async function connectAndReconnect(env: Record<string, string> = {}): Promise<{ stdout: string[]; stderr: string }> {
    const worker = quietWorker({ REDIS: urlAs(user), PREFIX: `lock:${uniquePrefix('quiet')}`, ...env });
    await worker.waitFor(/^locked$/);
    const before = await connectionsOf(user);
    expect(before.length).toBeGreaterThan(0);
    await server.admin.call('CLIENT', 'KILL', 'USER', user);
    worker.child.stdin!.write('reconnect\n');
    await worker.next(/^locked$/);
    // The second lock went through a connection made after the cut (its id is higher).
    const after = await connectionsOf(user);
    expect(Math.min(...after)).toBeGreaterThan(Math.max(...before));
    worker.child.stdin!.end();
    await worker.succeeded();
    return { stdout: worker.lines, stderr: worker.stderrTail(100_000) };
  }

  it("gets no console output from ioredis across connect and reconnect (Lockwarden's clients skip its ready check)", async () => {
    const printed = await connectAndReconnect();
    expect(printed.stdout).toEqual(['locked', 'locked']);
    expect(printed.stderr).toBe('');
  });

  it("would, with ioredis's ready check on: the test sees the noise it guards against", async () => {
    const printed = await connectAndReconnect({ READY_CHECK: '1' });
    expect(`${printed.stdout.join('\n')}\n${printed.stderr}`).toMatch(
      /Skipping the ready check because INFO command fails/,
    );
  });
});
