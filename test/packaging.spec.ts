import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ChildScript } from './harness/child';
import { startRedis } from './harness/redis';
import type { RedisTarget } from './harness/redis';

/**
 * The published package must serve Nest 11 apps (CommonJS) and Nest 12 apps
 * (ES modules). Build it, `npm pack` it, install the tarball into a fresh app
 * of each kind, and take a real lock there.
 */
const root = resolve('.');
let redis: RedisTarget;
let work: string;
let tarball: string;

beforeAll(async () => {
  redis = await startRedis();
  work = mkdtempSync(join(tmpdir(), 'lockwarden-pack-'));
  run('npx', ['tsc', '-p', 'libs/lockwarden/tsconfig.lib.json'], root);
  run('npm', ['pack', '--silent', '--pack-destination', work], resolve('libs/lockwarden'));
  tarball = join(
    work,
    readdirSync(work).find((f) => f.endsWith('.tgz'))!,
  );
}, 120_000);

afterAll(async () => {
  await redis.stop();
  rmSync(work, { recursive: true, force: true });
});

function run(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
}

/** Every public entry point, as a user's TypeScript imports it. */
const CHECK_SOURCE = `import 'reflect-metadata';
import { LOCK_BACKEND, LockEngine, LockModule, LockService, Locked } from 'lockwarden';
import type { LockHandle, LockModuleOptions } from 'lockwarden';
import { LockHealthIndicator } from 'lockwarden/health';
import { LockTestingModule, MemoryLockBackend } from 'lockwarden/testing';
const options: LockModuleOptions = { redis: 'redis://127.0.0.1:6380' };
const handle: LockHandle | undefined = undefined;
export const all = [LOCK_BACKEND, LockEngine, LockModule, LockService, Locked, LockHealthIndicator, LockTestingModule, MemoryLockBackend, options, handle];
`;

/** Type-checks CHECK_SOURCE in the consumer app `dir` with the given module settings, libraries included. */
function typeCheck(dir: string, module: string, moduleResolution: string): void {
  writeFileSync(join(dir, 'check.ts'), CHECK_SOURCE);
  const config = {
    compilerOptions: {
      target: 'ES2022',
      module,
      moduleResolution,
      strict: true,
      skipLibCheck: false,
      noEmit: true,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      esModuleInterop: true,
      typeRoots: [join(root, 'node_modules', '@types')],
      types: ['node'],
    },
    files: ['check.ts'],
  };
  const file = `tsconfig.${moduleResolution}.json`;
  writeFileSync(join(dir, file), JSON.stringify(config));
  run(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', file], dir);
}

function consumer(name: string, pkg: object, file: string, source: string): string {
  const dir = join(work, name);
  run('mkdir', ['-p', dir], work);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, private: true, ...pkg }, null, 2));
  writeFileSync(join(dir, file), source);
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', tarball], dir);
  return run('node', [file], dir);
}

const appSource = (importLines: string): string => `${importLines}
const { Module } = common;
const { NestFactory } = core;
const { LockModule, LockService, LockTimeoutError } = lockwarden;
class AppModule {}
Module({ imports: [LockModule.forRoot({ redis: process.env.REDIS_URL, keyPrefix: 'pack:' + process.pid + ':' })] })(AppModule);
const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
const locks = app.get(LockService);
const token = await locks.withLock('k', async (lock) => {
  const busy = await locks.tryAcquire('other');
  await busy.release();
  return lock.fencingToken;
});
const held = await locks.acquire('k');
const err = await locks.acquire('k', { waitMs: 0 }).catch((e) => e);
console.log(JSON.stringify({ token, timeout: err instanceof LockTimeoutError, nest: core.NestFactory ? 'ok' : 'no' }));
await held.release();
await app.close();
`;

/**
 * The app shape a user deploys: shutdown hooks on, a lock held by running work. On SIGTERM
 * the work sees its signal abort, finishes, its lock is released, and the process exits.
 */
const serverSource = (importLines: string, prefix: string): string => `${importLines}
const { Module } = common;
const { NestFactory } = core;
const { LockModule, LockService } = lockwarden;
class AppModule {}
Module({ imports: [LockModule.forRoot({ redis: process.env.REDIS_URL, keyPrefix: ${JSON.stringify(prefix)} })] })(AppModule);
const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
app.enableShutdownHooks();
const locks = app.get(LockService);
void locks.withLock('deploy', (lock) => new Promise((done) => {
  console.log('ready ' + lock.fencingToken);
  lock.signal.addEventListener('abort', done); // stop when told to
}));
`;

/** Starts `file` in the consumer `dir`, waits until it holds its lock, SIGTERMs it, and checks the lock is gone. */
async function shutsDownCleanly(dir: string, file: string, prefix: string): Promise<void> {
  const child = new ChildScript(
    spawn(process.execPath, [file], {
      cwd: dir,
      env: { ...process.env, REDIS_URL: redis.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  await child.waitFor(/^ready \d+$/);
  const admin = redis.client();
  try {
    expect(await admin.exists(`${prefix}{deploy}`)).toBe(1);
    child.kill('SIGTERM');
    await child.exited;
    expect(await admin.exists(`${prefix}{deploy}`)).toBe(0); // released, not left for a lease
  } finally {
    admin.disconnect();
  }
}

/** The README's recipe for testing a whole app without Redis, as a user's own Jest test. */
const jestSource = (importLines: string): string => `${importLines}

class Payouts {
  runs = 0;
  async pay(id) {
    this.runs++;
    return id;
  }
}
Injectable()(Payouts);
Locked('payout:{0}')(Payouts.prototype, 'pay', Object.getOwnPropertyDescriptor(Payouts.prototype, 'pay'));
Reflect.defineMetadata('design:paramtypes', [String], Payouts.prototype, 'pay');

class AppModule {}
Module({
  imports: [LockModule.forRootAsync({ isGlobal: true, useFactory: () => ({ redis: 'redis://127.0.0.1:1' }) })],
  providers: [Payouts],
})(AppModule);

test('the app runs on the in-memory backend, with no Redis', async () => {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
    .overrideProvider(LOCK_BACKEND)
    .useValue(new MemoryLockBackend())
    .compile();
  const app = await moduleRef.init();
  const locks = app.get(LockService);
  expect(await app.get(Payouts).pay('7')).toBe('7');
  const held = await locks.acquire('payout:7');
  expect(await locks.tryAcquire('payout:7')).toBeNull();
  await held.release();
  await app.close();
});
`;

/**
 * Installs Jest and @nestjs/testing of `nest` major into the consumer `dir` and runs its one
 * test file. Nest 11 only for now: under Jest's own module loader on Node 20, the CommonJS
 * build cannot require Nest 12's ES modules (Jest supports that from Node 24.9), so a Nest 12
 * app's Jest needs an ES-module build of this package, which it does not ship yet.
 */
function runUsersJest(dir: string, nest: string, file: string, source: string): string {
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', 'jest@^30', `@nestjs/testing@${nest}`], dir);
  writeFileSync(join(dir, file), source);
  return run(
    process.execPath,
    [join(dir, 'node_modules', 'jest', 'bin', 'jest.js'), '--rootDir', dir, '--ci', file],
    dir,
  );
}

/** The app's last line: it took a lock (a fencing token, which starts from a clock) and saw it busy. */
function expectLockedOnce(out: string): void {
  const result = JSON.parse(out.trim().split('\n').pop()!) as { token: unknown };
  expect(result).toEqual({ token: expect.any(Number), timeout: true, nest: 'ok' });
  expect(result.token).toBeGreaterThan(0);
}

describe('the packed library', () => {
  it('works in a Nest 11 CommonJS app', async () => {
    const out = consumer(
      'nest11-cjs',
      {
        dependencies: {
          '@nestjs/common': '^11.0.0',
          '@nestjs/core': '^11.0.0',
          '@nestjs/terminus': '^11.0.0',
          'reflect-metadata': '^0.2.0',
          rxjs: '^7.8.0',
        },
      },
      'main.cjs',
      `require('reflect-metadata');
const common = require('@nestjs/common');
const core = require('@nestjs/core');
const lockwarden = require('lockwarden');
(async () => {
${appSource('')}
})().catch((e) => { console.error(e); process.exit(1); });
`.replace(/^/, `process.env.REDIS_URL = ${JSON.stringify(redis.url)};\n`),
    );
    expectLockedOnce(out);
    expect(run('node', ['-p', "require('@nestjs/core/package.json').version"], join(work, 'nest11-cjs'))).toMatch(
      /^11\./,
    );
    // A publishable package: licence and changelog in, no sources or specs.
    const installed = join(work, 'nest11-cjs', 'node_modules', 'lockwarden');
    expect(existsSync(join(installed, 'LICENSE'))).toBe(true);
    expect(existsSync(join(installed, 'CHANGELOG.md'))).toBe(true);
    expect(existsSync(join(installed, 'GUARANTEES.md'))).toBe(true);
    // Its own README, for npm: how to install and use it, not the monorepo's demo set-up.
    const readme = readFileSync(join(installed, 'README.md'), 'utf8');
    expect(readme).toMatch(/^# lockwarden\n/);
    expect(readme).toContain('npm install lockwarden');
    expect(readme).not.toContain('apt-get');
    expect(existsSync(join(installed, 'src'))).toBe(false);
    expect(run('find', [installed, '-name', '*.spec.*'], work)).toBe('');
    // No file points at a source map the package does not ship.
    const mapped = run(
      'sh',
      ['-c', `grep -rl --include='*.js' --exclude-dir=node_modules sourceMappingURL '${installed}' || true`],
      work,
    );
    expect(mapped.trim()).toBe('');
    // The testing module runs a lock with no Redis at all.
    const memory = run(
      'node',
      [
        '-e',
        "require('reflect-metadata'); const { LockEngine } = require('lockwarden'); const { MemoryLockBackend } = require('lockwarden/testing');" +
          "const e = new LockEngine({}, undefined, new MemoryLockBackend()); e.withLock('k', (l) => l.fencingToken).then((t) => e.close().then(() => console.log(t)));",
      ],
      join(work, 'nest11-cjs'),
    );
    expect(Number(memory.trim())).toBeGreaterThan(0);
    // Every entry point type-checks, library types included, under the classic Nest
    // tsconfig (CommonJS, node10 resolution), under node16/nodenext, and for bundlers.
    typeCheck(join(work, 'nest11-cjs'), 'commonjs', 'node10');
    typeCheck(join(work, 'nest11-cjs'), 'node16', 'node16');
    typeCheck(join(work, 'nest11-cjs'), 'esnext', 'bundler');
    // The CLI ships in the package: `npx lockwarden` runs from the installed tarball.
    const listed = run(
      'npx',
      ['--no-install', 'lockwarden', 'list', '--redis', redis.url, '--json'],
      join(work, 'nest11-cjs'),
    );
    expect(Array.isArray(JSON.parse(listed))).toBe(true);
    // Deployed with shutdown hooks, SIGTERM releases the lock of the work it stops.
    const prefix = `pack:sigterm:cjs:${process.pid}:`;
    writeFileSync(
      join(work, 'nest11-cjs', 'server.cjs'),
      `require('reflect-metadata');
const common = require('@nestjs/common');
const core = require('@nestjs/core');
const lockwarden = require('lockwarden');
(async () => {
${serverSource('', prefix)}
})();
`,
    );
    await shutsDownCleanly(join(work, 'nest11-cjs'), 'server.cjs', prefix);
    // The README's whole-app test recipe, in the user's own Jest.
    runUsersJest(
      join(work, 'nest11-cjs'),
      '^11',
      'app.test.cjs',
      jestSource(`require('reflect-metadata');
const { Injectable, Module } = require('@nestjs/common');
const { Test } = require('@nestjs/testing');
const { LOCK_BACKEND, LockModule, LockService, Locked } = require('lockwarden');
const { MemoryLockBackend } = require('lockwarden/testing');`),
    );
  }, 300_000);

  it('works in a Nest 12 ES-module app', async () => {
    const out = consumer(
      'nest12-esm',
      {
        type: 'module',
        dependencies: {
          '@nestjs/common': '^12.0.0',
          '@nestjs/core': '^12.0.0',
          'reflect-metadata': '^0.2.0',
          rxjs: '^7.8.0',
        },
      },
      'main.js',
      `process.env.REDIS_URL = ${JSON.stringify(redis.url)};
${appSource(`import 'reflect-metadata';
import * as common from '@nestjs/common';
import * as core from '@nestjs/core';
import * as lockwarden from 'lockwarden';`)}`,
    );
    expectLockedOnce(out);
    expect(run('node', ['-p', "require('@nestjs/core/package.json').version"], join(work, 'nest12-esm'))).toMatch(
      /^12\./,
    );
    // terminus is an optional peer: without it the main entry loads (above), and only the
    // health subpath asks for it.
    expect(() => run('node', ['-e', "require('lockwarden/health')"], join(work, 'nest12-esm'))).toThrow(
      /@nestjs\/terminus/,
    );
    const prefix = `pack:sigterm:esm:${process.pid}:`;
    writeFileSync(
      join(work, 'nest12-esm', 'server.js'),
      serverSource(
        `import 'reflect-metadata';
import * as common from '@nestjs/common';
import * as core from '@nestjs/core';
import * as lockwarden from 'lockwarden';`,
        prefix,
      ),
    );
    await shutsDownCleanly(join(work, 'nest12-esm'), 'server.js', prefix);
  }, 300_000);
});
