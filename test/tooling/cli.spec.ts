import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { LockEngine } from 'lockwarden/core';
import { TS_ARGS } from '../harness/child';
import { redisForFile, uniquePrefix } from '../harness/redis';

/** `npx lockwarden`, run as a real process against a real Redis: output and exit codes. */
const server = redisForFile();
let engine: LockEngine;
let prefix: string;

beforeAll(() => {
  prefix = uniquePrefix('cli');
  engine = new LockEngine({ redis: server.redis.url, keyPrefix: prefix, instanceId: 'worker-7' });
  server.atEnd(() => engine.close());
});

function cli(...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [...TS_ARGS, resolve('libs/lockwarden/src/cli/bin.ts'), ...args], {
    env: { ...process.env, TS_NODE_PROJECT: resolve('tsconfig.json'), REDIS_URL: '' },
    stdio: 'pipe',
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  return new Promise((done) => child.once('close', (code) => done({ code, out, err })));
}

describe('the lockwarden CLI', () => {
  it('runs as `npx lockwarden` in the repository, built or not, as docs/operating.md documents', async () => {
    const child = spawn('npx', ['--no-install', 'lockwarden', '--help'], { stdio: 'pipe', env: process.env });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const code = await new Promise<number | null>((done) => child.once('close', done));
    expect(code).toBe(0);
    expect(out).toMatch(/^Usage: lockwarden <command>/);
  });

  it('lists held locks with SCAN, as a table and as JSON', async () => {
    const order = await engine.acquire('order:1', { leaseMs: 60_000, renew: false });
    const orderToken = await order.fencingToken();
    const report = await engine.acquireRead('report', { leaseMs: 60_000, renew: false });
    const table = await cli('list', '--redis', server.redis.url, '--prefix', prefix);
    expect(table.code).toBe(0);
    expect(table.out).toMatch(/^LOCK\s+KIND\s+HOLDERS\s+LEASE-LEFT\s+FENCE\s+WAITERS$/m);
    expect(table.out).toMatch(new RegExp(`^order:1\\s+mutex\\s+worker-7\\s+\\S+\\s+${orderToken}\\s+0$`, 'm'));
    expect(table.out).toMatch(/^report\s+read\s+worker-7/m);
    const json = await cli('list', 'order:*', '--redis', server.redis.url, '--prefix', prefix, '--json');
    const listed = JSON.parse(json.out) as { key: string; kind: string }[];
    expect(listed.map((l) => [l.key, l.kind])).toEqual([['order:1', 'mutex']]);
    await order.release();
    await report.release();
  });

  it('inspects one lock: exit 0 when held, 1 when free, never an owner token', async () => {
    const lock = await engine.acquire('job', { leaseMs: 60_000, renew: false });
    // Before the holder reads its token, none was minted: the CLI says null.
    const unread = await cli('inspect', 'job', '--redis', server.redis.url, '--prefix', prefix, '--json');
    expect(JSON.parse(unread.out)).toMatchObject({ key: 'job', held: true, fencingToken: null });
    const lockToken = await lock.fencingToken();
    const held = await cli('inspect', 'job', '--redis', server.redis.url, '--prefix', prefix, '--json');
    expect(held.code).toBe(0);
    expect(JSON.parse(held.out)).toMatchObject({
      key: 'job',
      held: true,
      kind: 'mutex',
      fencingToken: lockToken,
    });
    const token = (await server.admin.get(`${prefix}{job}`))!.split('|')[0];
    expect(token).toMatch(/^[0-9a-f]{32}$/);
    expect(held.out).not.toContain(token);
    await lock.release();
    expect((await cli('inspect', 'job', '--redis', server.redis.url, '--prefix', prefix)).code).toBe(1);
  });

  it('shows one semaphore: permits in use of the limit and each holder, exit 1 when none is held, never an owner token', async () => {
    const sem = engine.semaphore('exports', { limit: 3 });
    const two = await sem.acquire({ permits: 2, leaseMs: 60_000 });
    const json = await cli('semaphore', 'exports', '--redis', server.redis.url, '--prefix', prefix, '--json');
    expect(json.code).toBe(0);
    const info = JSON.parse(json.out);
    expect(info).toMatchObject({
      key: 'exports',
      limit: 3,
      used: 2,
      available: 1,
      fencingToken: await two.fencingToken(),
    });
    expect(info.holders).toEqual([{ instanceId: 'worker-7', permits: 2, leaseLeftMs: expect.any(Number) }]);
    const [token] = await server.admin
      .hkeys(`${prefix}{exports}:sem:permits`)
      .then((f) => f.filter((k) => k !== '#used'));
    expect(json.out).not.toContain(token);
    const table = await cli('semaphore', 'exports', '--redis', server.redis.url, '--prefix', prefix);
    expect(table.out).toMatch(/^Semaphore exports: 2 of 3 permits in use/);
    expect(table.out).toMatch(/worker-7\s+2\s+/);
    await two.release();
    const free = await cli('semaphore', 'exports', '--redis', server.redis.url, '--prefix', prefix);
    expect(free.code).toBe(1);
    expect(free.out).toContain('No permits held.');
    expect((await cli('semaphore', '--redis', server.redis.url)).code).toBe(2);
  });

  it('unlocks only with --force, and says whether there was anything to remove', async () => {
    const lock = await engine.acquire('stuck', { leaseMs: 60_000, renew: false });
    const refused = await cli('unlock', 'stuck', '--redis', server.redis.url, '--prefix', prefix);
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(/--force/);
    expect(await server.admin.exists(`${prefix}{stuck}`)).toBe(1);
    const removed = await cli('unlock', 'stuck', '--force', '--redis', server.redis.url, '--prefix', prefix);
    expect(removed.code).toBe(0);
    expect(await server.admin.exists(`${prefix}{stuck}`)).toBe(0);
    expect((await cli('unlock', 'stuck', '--force', '--redis', server.redis.url, '--prefix', prefix)).code).toBe(1);
    await lock.release();
  });

  it('watches: one refresh per interval, as many as --count asks', async () => {
    const lock = await engine.acquire('watched', { leaseMs: 60_000, renew: false });
    const w = await cli(
      'watch',
      '--redis',
      server.redis.url,
      '--prefix',
      prefix,
      '--json',
      '--count',
      '3',
      '--interval',
      '20',
    );
    expect(w.code).toBe(0);
    const frames = w.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { key: string }[]);
    expect(frames).toHaveLength(3);
    for (const f of frames) expect(f.map((i) => i.key)).toContain('watched');
    await lock.release();
  });

  it('says on stderr where a name is in use when the --prefix given finds nothing there', async () => {
    // Names no other run uses, even on a shared REDIS_URL: a note must point at this lock only.
    const name = `moved:${process.pid}:${Date.now().toString(36)}`;
    const lock = await engine.acquire(name, { leaseMs: 60_000, renew: false });
    const note = new RegExp(
      `^Note: nothing under the prefix "wrong:", but lock "${name}" is held under the prefix "${prefix}"\\. ` +
        `Pass the keyPrefix your application uses: --prefix "${prefix}"\\n$`,
    );
    const json = await cli('inspect', name, '--redis', server.redis.url, '--prefix', 'wrong:', '--json');
    expect(json.code).toBe(1); // the answer for the prefix asked about is unchanged
    expect(JSON.parse(json.out)).toMatchObject({ key: name, held: false });
    expect(json.err).toMatch(note);
    const byDefault = await cli('inspect', name, '--redis', server.redis.url); // no --prefix: lock:
    expect(byDefault.err).toMatch(
      new RegExp(`nothing under the prefix "lock:", but lock "${name}" is held under the prefix`),
    );
    const unlock = await cli('unlock', name, '--force', '--redis', server.redis.url, '--prefix', 'wrong:');
    expect(unlock.code).toBe(1);
    expect(unlock.err).toMatch(new RegExp(`lock "${name}" is held under the prefix`));
    expect(await server.admin.exists(`${prefix}{${name}}`)).toBe(1); // nothing removed under the other prefix
    const right = await cli('inspect', name, '--redis', server.redis.url, '--prefix', prefix);
    expect(right.code).toBe(0);
    expect(right.err).toBe('');
    await lock.release();
    const free = await cli('inspect', name, '--redis', server.redis.url, '--prefix', 'wrong:');
    expect(free.code).toBe(1);
    expect(free.err).toBe(''); // held nowhere: nothing to point at

    const semName = `${name}:sem`;
    const sem = engine.semaphore(semName, { limit: 2 });
    await (await sem.acquire({ leaseMs: 60_000 })).release(); // stores the limit under `prefix`
    const semaphore = await cli('semaphore', semName, '--redis', server.redis.url, '--prefix', 'wrong:');
    expect(semaphore.code).toBe(1);
    expect(semaphore.err).toMatch(new RegExp(`semaphore "${semName}" exists under the prefix`));
    expect((await cli('semaphore', semName, '--redis', server.redis.url, '--prefix', prefix)).err).toBe('');
  });

  it('exits 2 on usage errors and 3 when Redis cannot be reached', async () => {
    expect((await cli('frobnicate', '--redis', server.redis.url)).code).toBe(2);
    expect((await cli('inspect', '--redis', server.redis.url)).code).toBe(2);
    expect((await cli('list')).code).toBe(2); // no --redis and no REDIS_URL
    expect((await cli('list', '--bogus', '--redis', server.redis.url)).code).toBe(2);
    const down = await cli('list', '--redis', 'redis://127.0.0.1:1');
    expect(down.code).toBe(3);
    expect(down.err).toMatch(/Redis at redis:\/\/127\.0\.0\.1:1 failed/);
    expect((await cli('--help')).code).toBe(0);
  });
});
