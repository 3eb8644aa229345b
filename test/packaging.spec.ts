import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ChildScript } from './harness/child';
import { startRedis } from './harness/redis';
import type { RedisTarget } from './harness/redis';

/**
 * The published package must serve Nest 11 apps (CommonJS, with the classic tsconfig or with
 * nodenext) and Nest 12 apps (ES modules). Build it, `npm pack` it, and install the tarball
 * into a fresh TypeScript app of each kind. Each app is compiled by its own tsconfig with
 * library types checked, boots, takes a real lock, runs the README's whole-app test recipe in
 * its own Jest, and releases its lock on SIGTERM.
 */
const root = resolve('.');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
let redis: RedisTarget;
let work: string;
let tarball: string;

beforeAll(async () => {
  redis = await startRedis();
  work = mkdtempSync(join(tmpdir(), 'lockwarden-pack-'));
  run(process.execPath, ['tools/build-lib.cjs'], root);
  run('npm', ['pack', '--silent', '--pack-destination', work], resolve('libs/lockwarden'));
  tarball = join(
    work,
    readdirSync(work).find((f) => f.endsWith('.tgz'))!,
  );
}, 180_000);

afterAll(async () => {
  await redis.stop();
  rmSync(work, { recursive: true, force: true });
});

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  try {
    return execFileSync(cmd, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
  } catch (e) {
    const { stdout, stderr } = e as { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}:\n${stdout ?? ''}\n${stderr ?? ''}`);
  }
}

/** `run`, without blocking: the three apps install side by side. */
function runAsync(cmd: string, args: string[], cwd: string): Promise<string> {
  return new Promise((done, fail) =>
    execFile(cmd, args, { cwd, encoding: 'utf8', timeout: 300_000 }, (e, stdout, stderr) =>
      e ? fail(new Error(`${cmd} ${args.join(' ')} failed in ${cwd}:\n${stdout}\n${stderr}`)) : done(stdout),
    ),
  );
}

/** Every public entry point, as a user's TypeScript imports it. */
const CHECK_SOURCE = `import 'reflect-metadata';
import { LOCK_BACKEND, LockEngine, LockModule, LockService, Locked } from 'lockwarden';
import type { LockHandle, LockModuleOptions } from 'lockwarden';
import { LockHealthIndicator } from 'lockwarden/health';
import { LockTestingModule, MemoryLockBackend } from 'lockwarden/testing';
import { LockDashboardModule } from 'lockwarden/dashboard';
import type { LockDashboardOptions } from 'lockwarden/dashboard';
const options: LockModuleOptions = { redis: 'redis://127.0.0.1:6380' };
const handle: LockHandle | undefined = undefined;
const dashboard: LockDashboardOptions = { path: '/locks' };
export const all = [LOCK_BACKEND, LockEngine, LockModule, LockService, Locked, LockHealthIndicator, LockTestingModule, MemoryLockBackend, LockDashboardModule, options, handle, dashboard];
`;

/** A decorated service and the app module, the way a user writes them. */
const SERVICE_SOURCE = `import { Injectable } from '@nestjs/common';
import { Locked } from 'lockwarden';

@Injectable()
export class Payouts {
  runs = 0;

  @Locked('payout:{0}')
  async pay(id: string): Promise<string> {
    this.runs++;
    return id;
  }
}
`;

const MODULE_SOURCE = `import { Module } from '@nestjs/common';
import { LockModule } from 'lockwarden';
import { Payouts } from './payouts.js';

@Module({
  imports: [
    LockModule.forRootAsync({
      isGlobal: true,
      useFactory: () => ({ redis: process.env.REDIS_URL ?? 'redis://127.0.0.1:1', keyPrefix: process.env.KEY_PREFIX }),
    }),
  ],
  providers: [Payouts],
})
export class AppModule {}
`;

/**
 * The app as deployed: shutdown hooks on. It takes a lock, sees it busy from a second acquire,
 * runs the decorated method, then holds 'deploy' in running work that stops when its signal
 * aborts. On SIGTERM the work ends and its lock is released.
 */
const MAIN_SOURCE = `import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { LockService, LockTimeoutError } from 'lockwarden';
import { AppModule } from './app.module.js';
import { Payouts } from './payouts.js';

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  app.enableShutdownHooks();
  const locks = app.get(LockService);
  const token = await locks.withLock('k', (lock) => lock.fencingToken);
  const held = await locks.acquire('k');
  const err: unknown = await locks.acquire('k', { waitMs: 0 }).catch((e: unknown) => e);
  await held.release();
  const paid = await app.get(Payouts).pay('7');
  console.log(JSON.stringify({ token, timeout: err instanceof LockTimeoutError, paid }));
  void locks.withLock('deploy', (lock) => new Promise<void>((done) => {
    console.log('ready ' + lock.fencingToken);
    lock.signal.addEventListener('abort', () => done());
  }));
}
void main();
`;

/** The README's recipe for testing a whole app without Redis, as the user's own Jest test. */
const TEST_SOURCE = `import 'reflect-metadata';
import { expect, test } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { LOCK_BACKEND, LockService } from 'lockwarden';
import { MemoryLockBackend } from 'lockwarden/testing';
import { AppModule } from './app.module.js';
import { Payouts } from './payouts.js';

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

interface AppKind {
  name: string;
  nest: '^11' | '^12';
  type: 'commonjs' | 'module';
  module: string;
  moduleResolution: string;
}

function tsconfig(kind: Pick<AppKind, 'module' | 'moduleResolution'>, files: object): object {
  return {
    compilerOptions: {
      target: 'ES2022',
      module: kind.module,
      moduleResolution: kind.moduleResolution,
      strict: true,
      skipLibCheck: false,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      esModuleInterop: true,
      rootDir: 'src',
      outDir: 'out',
      typeRoots: [join(root, 'node_modules', '@types')],
      types: ['node'],
    },
    ...files,
  };
}

/** Creates the app `kind` with the tarball and its peers installed, and compiles it. */
async function createApp(kind: AppKind, withTerminus: boolean): Promise<string> {
  const dir = join(work, kind.name);
  mkdirSync(join(dir, 'src'), { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: kind.name, private: true, type: kind.type }, null, 2),
  );
  const deps = [
    `@nestjs/common@${kind.nest}`,
    `@nestjs/core@${kind.nest}`,
    `@nestjs/testing@${kind.nest}`,
    ...(withTerminus ? [`@nestjs/terminus@${kind.nest}`] : []),
    'reflect-metadata@^0.2.0',
    'rxjs@^7.8.0',
    'jest@^30',
    tarball,
  ];
  await runAsync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...deps], dir);
  const sources: Record<string, string> = {
    'payouts.ts': SERVICE_SOURCE,
    'app.module.ts': MODULE_SOURCE,
    'main.ts': MAIN_SOURCE,
    'app.test.ts': TEST_SOURCE,
  };
  for (const [file, source] of Object.entries(sources)) writeFileSync(join(dir, 'src', file), source);
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig(kind, { include: ['src'] }), null, 2));
  await runAsync(process.execPath, [tsc, '-p', 'tsconfig.json'], dir);
  return dir;
}

/** Type-checks every entry point in `dir` under the given module settings, library types included. */
function typeCheckEntries(dir: string, kind: Pick<AppKind, 'module' | 'moduleResolution'>): void {
  mkdirSync(join(dir, 'check'), { recursive: true });
  writeFileSync(join(dir, 'check', 'check.ts'), CHECK_SOURCE);
  const file = `tsconfig.check-${kind.moduleResolution}.json`;
  const config = tsconfig(kind, { files: ['check/check.ts'] }) as { compilerOptions: Record<string, unknown> };
  config.compilerOptions = { ...config.compilerOptions, noEmit: true, rootDir: '.' };
  writeFileSync(join(dir, file), JSON.stringify(config));
  run(process.execPath, [tsc, '-p', file], dir);
}

/** Boots the compiled app against Redis, checks its lock work, SIGTERMs it and checks the lock is gone. */
async function bootLockAndStop(dir: string, name: string): Promise<void> {
  const prefix = `pack:${name}:${process.pid}:`;
  const child = new ChildScript(
    spawn(process.execPath, ['out/main.js'], {
      cwd: dir,
      env: { ...process.env, REDIS_URL: redis.url, KEY_PREFIX: prefix },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  await child.waitFor(/^ready \d+$/);
  const result = JSON.parse(child.lines.find((l) => l.startsWith('{'))!) as { token: number };
  expect(result).toEqual({ token: expect.any(Number), timeout: true, paid: '7' });
  expect(result.token).toBeGreaterThan(0); // fencing tokens start from Redis' clock
  const admin = redis.client();
  try {
    expect(await admin.exists(`${prefix}{deploy}`)).toBe(1);
    child.kill('SIGTERM');
    await child.exited; // Nest closes the app, then re-raises the signal to end the process

    expect(await admin.exists(`${prefix}{deploy}`)).toBe(0); // released, not left for a lease
  } finally {
    admin.disconnect();
  }
}

/** Runs the compiled README recipe in the app's own Jest; an ES-module app needs Jest's ESM mode. */
function runUsersJest(dir: string, kind: AppKind): void {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_OPTIONS: kind.type === 'module' ? '--experimental-vm-modules' : '',
  };
  delete env.JEST_WORKER_ID; // the user's Jest is not one of our workers
  run(
    process.execPath,
    [
      join(dir, 'node_modules', 'jest', 'bin', 'jest.js'),
      '--rootDir',
      dir,
      '--ci',
      '--config',
      '{"transform":{}}',
      'out/app.test.js',
    ],
    dir,
    env,
  );
}

function nestMajor(dir: string): string {
  return run('node', ['-p', "require('@nestjs/core/package.json').version"], dir);
}

const CLASSIC: AppKind = {
  name: 'nest11-classic',
  nest: '^11',
  type: 'commonjs',
  module: 'commonjs',
  moduleResolution: 'node10',
};
const NODENEXT: AppKind = {
  name: 'nest11-nodenext',
  nest: '^11',
  type: 'commonjs',
  module: 'nodenext',
  moduleResolution: 'nodenext',
};
const ESM: AppKind = {
  name: 'nest12-esm',
  nest: '^12',
  type: 'module',
  module: 'nodenext',
  moduleResolution: 'nodenext',
};
let apps: Promise<string[]>;

describe('the packed library', () => {
  beforeAll(() => {
    apps = Promise.all([createApp(CLASSIC, true), createApp(NODENEXT, true), createApp(ESM, false)]);
    apps.catch(() => undefined); // each test awaits it and reports the failure
  });

  it('works in a Nest 11 app with the classic CommonJS tsconfig', async () => {
    const kind = CLASSIC;
    const dir = (await apps)[0];
    expect(nestMajor(dir)).toMatch(/^11\./);
    typeCheckEntries(dir, kind);
    // The same entry points under node16 and for bundlers, from the same CommonJS app.
    typeCheckEntries(dir, { module: 'node16', moduleResolution: 'node16' });
    typeCheckEntries(dir, { module: 'esnext', moduleResolution: 'bundler' });
    await bootLockAndStop(dir, kind.name);
    runUsersJest(dir, kind);

    // A publishable package: licence and changelog in, no sources or specs.
    const installed = join(dir, 'node_modules', 'lockwarden');
    expect(existsSync(join(installed, 'LICENSE'))).toBe(true);
    expect(existsSync(join(installed, 'CHANGELOG.md'))).toBe(true);
    expect(existsSync(join(installed, 'GUARANTEES.md'))).toBe(true);
    // Its own README, for npm: how to install and use it, not the monorepo's demo set-up.
    const readme = readFileSync(join(installed, 'README.md'), 'utf8');
    expect(readme).toMatch(/^# lockwarden\n/);
    expect(readme).toContain('npm install lockwarden');
    expect(readme).not.toContain('apt-get');
    expect(readme).toContain('.overrideProvider(LOCK_BACKEND)'); // the recipe the Jest test above runs
    expect(existsSync(join(installed, 'src'))).toBe(false);
    expect(run('find', [installed, '-name', '*.spec.*'], work)).toBe('');
    // No file points at a source map the package does not ship.
    const mapped = run('sh', ['-c', `grep -rl --include='*.js' sourceMappingURL '${installed}' || true`], work);
    expect(mapped.trim()).toBe('');
    // The testing module runs a lock with no Redis at all.
    const memory = run(
      'node',
      [
        '-e',
        "require('reflect-metadata'); const { LockEngine } = require('lockwarden'); const { MemoryLockBackend } = require('lockwarden/testing');" +
          "const e = new LockEngine({}, undefined, new MemoryLockBackend()); e.withLock('k', (l) => l.fencingToken).then((t) => e.close().then(() => console.log(t)));",
      ],
      dir,
    );
    expect(Number(memory.trim())).toBeGreaterThan(0);
    // The CLI ships in the package: `npx lockwarden` runs from the installed tarball.
    const listed = run('npx', ['--no-install', 'lockwarden', 'list', '--redis', redis.url, '--json'], dir);
    expect(Array.isArray(JSON.parse(listed))).toBe(true);
  }, 600_000);

  it('works in a Nest 11 app with a nodenext tsconfig', async () => {
    const kind = NODENEXT;
    const dir = (await apps)[1];
    expect(nestMajor(dir)).toMatch(/^11\./);
    expect(readFileSync(join(dir, 'out', 'main.js'), 'utf8')).toContain('require("lockwarden")'); // compiled to CommonJS
    typeCheckEntries(dir, kind);
    await bootLockAndStop(dir, kind.name);
    runUsersJest(dir, kind);
  }, 600_000);

  it('works in a Nest 12 ES-module app', async () => {
    const kind = ESM;
    const dir = (await apps)[2];
    expect(nestMajor(dir)).toMatch(/^12\./);
    expect(readFileSync(join(dir, 'out', 'main.js'), 'utf8')).toContain("from 'lockwarden'"); // compiled to ES modules
    // The app loads the ES build, not the CommonJS one through require(esm).
    expect(run('node', ['--input-type=module', '-e', "console.log(import.meta.resolve('lockwarden'))"], dir)).toMatch(
      /\/dist\/esm\/index\.js\n$/,
    );
    await bootLockAndStop(dir, kind.name);
    runUsersJest(dir, kind);
    // terminus is an optional peer: without it everything above ran, and only the health
    // subpath asks for it.
    expect(() => run('node', ['--input-type=module', '-e', "await import('lockwarden/health')"], dir)).toThrow(
      /@nestjs\/terminus/,
    );
    run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', '@nestjs/terminus@^12'], dir);
    typeCheckEntries(dir, kind);
    expect(
      run(
        'node',
        [
          '--input-type=module',
          '-e',
          "const h = await import('lockwarden/health'); console.log(typeof h.LockHealthIndicator)",
        ],
        dir,
      ),
    ).toBe('function\n');
  }, 600_000);
});
