import { execFile, execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ChildScript } from '../harness/child';
import { APP_SOURCES, CHECK_SOURCE } from '../harness/packed-app';
import { redisForFile } from '../harness/redis';

/**
 * The published package must serve Nest 11 apps (CommonJS, with the classic tsconfig or with
 * nodenext) and Nest 12 apps (ES modules). Build it, `npm pack` it, and install the tarball
 * into a fresh install of each Nest major. Each app is compiled by its own tsconfig with
 * library types checked, boots, takes a real lock, runs the README's whole-app test recipe in
 * its own Jest, and releases its lock on SIGTERM. The two Nest 11 apps differ only in their
 * tsconfig, so they sit side by side on one install (Node and TypeScript find its
 * node_modules one folder up, as in a monorepo). Where Node can require an ES module, a
 * CommonJS app on the Nest 12 install boots and locks too, and runs its Jest test where Jest can.
 */
const root = resolve('.');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const server = redisForFile();
let work: string;
let tarball: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'lockwarden-pack-'));
  await runAsync(process.execPath, ['tools/build-lib.cjs'], root);
  await runAsync('npm', ['pack', '--silent', '--pack-destination', work], resolve('libs/lockwarden'));
  tarball = join(
    work,
    readdirSync(work).find((f) => f.endsWith('.tgz'))!,
  );
}, 180_000);

afterAll(() => {
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

/**
 * `run`, without blocking, and at a lower CPU priority: building, installing and compiling are
 * throughput work, and the timing-sensitive tests running beside this file keep the CPU.
 */
function runAsync(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((done, fail) => {
    const child = execFile(cmd, args, { cwd, env, encoding: 'utf8', timeout: 300_000 }, (e, stdout, stderr) =>
      e ? fail(new Error(`${cmd} ${args.join(' ')} failed in ${cwd}:\n${stdout}\n${stderr}`)) : done(stdout),
    );
    try {
      // Before it starts any process of its own: those inherit the priority.
      if (child.pid !== undefined) setPriority(child.pid, 10);
    } catch {
      // gone already, or not allowed here: it runs at the usual priority
    }
  });
}

/** One `npm install` of a Nest major with the tarball: the apps of that major share it. */
interface Install {
  name: string;
  nest: '^11' | '^12';
  type: 'commonjs' | 'module';
  /** Installed with the rest, beside Nest and the tarball. */
  extras: string[];
  /**
   * Installed, then moved out of Node's and TypeScript's sight until a test puts it back
   * (`restore`): the app stands for one that never installed it, without a second install.
   */
  hidden?: string;
}

interface ModuleSettings {
  module: string;
  moduleResolution: string;
}

interface AppKind extends ModuleSettings {
  name: string;
  install: Install;
  /** The app's own compile also type-checks every entry point (`src/entry-points.ts`). */
  entries: boolean;
}

function tsconfig(kind: ModuleSettings, files: object): object {
  return {
    compilerOptions: {
      target: 'ES2022',
      module: kind.module,
      moduleResolution: kind.moduleResolution,
      strict: true,
      skipLibCheck: false,
      // TypeScript's own lib files are not what these compiles check, and a third of their time.
      skipDefaultLibCheck: true,
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

/** Installs a Nest major, its peers for the library and the tarball into a fresh folder. */
async function install(what: Install): Promise<string> {
  const dir = join(work, what.name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: what.name, private: true, type: what.type }, null, 2),
  );
  const deps = [
    `@nestjs/common@${what.nest}`,
    `@nestjs/core@${what.nest}`,
    `@nestjs/testing@${what.nest}`,
    ...what.extras,
    'reflect-metadata@^0.2.0',
    'rxjs@^7.8.0',
    'jest@^30',
    tarball,
  ];
  // From npm's cache where it already holds a version that fits: after the first run, an
  // install asks the registry only for what the cache lacks.
  await runAsync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', ...deps], dir);
  if (what.hidden) renameSync(join(dir, 'node_modules', what.hidden), hiddenPath(dir, what.hidden));
  return dir;
}

function hiddenPath(dir: string, name: string): string {
  return join(dir, 'node_modules', `${name}.hidden`);
}

/** Puts back the package an install hid: the app now has it, as if installed just now. */
function restore(dir: string, what: Install): void {
  if (what.hidden) renameSync(hiddenPath(dir, what.hidden), join(dir, 'node_modules', what.hidden));
}

/**
 * Writes the apps of one install and compiles them; type-checks every entry point under each
 * app's `checks` in the same `tsc -b` run, which parses the declarations they share once.
 */
async function createApps(installed: Promise<string>, apps: { kind: AppKind; checks: ModuleSettings[] }[]) {
  const base = await installed;
  const projects: string[] = [];
  const dirs = apps.map(({ kind, checks }) => {
    const dir = join(base, kind.name);
    mkdirSync(join(dir, 'src'), { recursive: true });
    for (const [file, source] of Object.entries(APP_SOURCES)) writeFileSync(join(dir, 'src', file), source);
    // In the app's own compile rather than a second program with the same settings.
    if (kind.entries) writeFileSync(join(dir, 'src', 'entry-points.ts'), CHECK_SOURCE);
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig(kind, { include: ['src'] }), null, 2));
    projects.push(join(kind.name, 'tsconfig.json'), ...checks.map((c) => join(kind.name, checkConfig(dir, c))));
    return dir;
  });
  await runAsync(process.execPath, [tsc, '-b', ...projects], base);
  return dirs;
}

/** A tsconfig that type-checks every entry point under `settings`, library types included; its file name. */
function checkConfig(dir: string, settings: ModuleSettings): string {
  mkdirSync(join(dir, 'check'), { recursive: true });
  writeFileSync(join(dir, 'check', 'check.ts'), CHECK_SOURCE);
  const file = `tsconfig.check-${settings.moduleResolution}.json`;
  const config = tsconfig(settings, { files: ['check/check.ts'] }) as { compilerOptions: Record<string, unknown> };
  config.compilerOptions = { ...config.compilerOptions, noEmit: true, rootDir: '.' };
  writeFileSync(join(dir, file), JSON.stringify(config));
  return file;
}

/** Type-checks every entry point in `dir` under the given module settings, library types included. */
async function typeCheckEntries(dir: string, settings: ModuleSettings): Promise<void> {
  await runAsync(process.execPath, [tsc, '-p', checkConfig(dir, settings)], dir);
}

/** Boots the compiled app against Redis, checks its lock work, SIGTERMs it and checks the lock is gone. */
async function bootLockAndStop(dir: string, name: string): Promise<void> {
  const prefix = `pack:${name}:${process.pid}:`;
  const child = new ChildScript(
    spawn(process.execPath, ['out/main.js'], {
      cwd: dir,
      env: { ...process.env, REDIS_URL: server.redis.url, KEY_PREFIX: prefix },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  await child.waitFor(/^ready \d+$/);
  const result = JSON.parse(child.lines.find((l) => l.startsWith('{'))!) as { token: number };
  expect(result).toEqual({ token: expect.any(Number), timeout: true, paid: '7' });
  expect(result.token).toBeGreaterThan(0); // fencing tokens start from Redis' clock
  expect(await server.admin.exists(`${prefix}{deploy}`)).toBe(1);
  child.kill('SIGTERM');
  await child.exited; // Nest closes the app, then re-raises the signal to end the process

  expect(await server.admin.exists(`${prefix}{deploy}`)).toBe(0); // released, not left for a lease
}

/** Runs the compiled README recipe in the app's own Jest; an ES-module app needs Jest's ESM mode. */
async function runUsersJest(dir: string, kind: AppKind): Promise<void> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_OPTIONS: kind.install.type === 'module' ? '--experimental-vm-modules' : '',
  };
  delete env.JEST_WORKER_ID; // the user's Jest is not one of our workers
  await runAsync(
    process.execPath,
    [
      join(dir, '..', 'node_modules', 'jest', 'bin', 'jest.js'),
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

/**
 * An app that brings node-redis never loads ioredis, from either build: a lock taken with a
 * node-redis client leaves no ioredis module in the require cache (the one `createRequire`
 * shares with the library's lazy load), and one taken from a URL does load it.
 */
async function nodeRedisOnly(dir: string): Promise<void> {
  const lock = (setup: string, cjs = false): string =>
    (cjs
      ? `const { createClient } = require('redis'); const { LockEngine } = require('lockwarden');`
      : `const { createClient } = await import('redis'); const { LockEngine } = await import('lockwarden');`) +
    `${setup} const h = await e.acquire('only'); const t = await h.fencingToken(); await h.release(); await e.close();` +
    `if (typeof c !== 'undefined') await c.close();` +
    `const { createRequire } = await import('node:module'); const cache = createRequire(process.cwd() + '/x.js').cache;` +
    `console.log(t > 0, Object.keys(cache).some((k) => k.includes('/node_modules/ioredis/')));`;
  const withClient = `const c = await createClient({ url: '${server.redis.url}' }).on('error', () => {}).connect(); const e = new LockEngine({ client: c });`;
  const withUrl = `const e = new LockEngine({ redis: '${server.redis.url}' });`;
  for (const type of ['module', 'commonjs']) {
    const script = type === 'module' ? lock(withClient) : `(async () => { ${lock(withClient, true)} })()`;
    expect(run('node', [`--input-type=${type}`, '-e', script], dir)).toBe('true false\n');
  }
  expect(run('node', ['--input-type=module', '-e', lock(withUrl)], dir)).toBe('true true\n');
}

function nestMajor(dir: string): string {
  return run('node', ['-p', "require('@nestjs/core/package.json').version"], dir);
}

const NEST11: Install = { name: 'nest11', nest: '^11', type: 'commonjs', extras: ['@nestjs/terminus@^11'] };
// terminus is an optional peer: the Nest 12 app compiles and runs without it first.
const NEST12: Install = {
  name: 'nest12',
  nest: '^12',
  type: 'module',
  extras: ['@nestjs/terminus@^12', 'redis@^6'],
  hidden: '@nestjs/terminus',
};
const CLASSIC: AppKind = {
  name: 'classic',
  install: NEST11,
  module: 'commonjs',
  moduleResolution: 'node10',
  entries: true,
};
const NODENEXT: AppKind = {
  name: 'nodenext',
  install: NEST11,
  module: 'nodenext',
  moduleResolution: 'nodenext',
  entries: true,
};
const ESM: AppKind = { name: 'esm', install: NEST12, module: 'nodenext', moduleResolution: 'nodenext', entries: false };
let apps: Promise<string[]>;

/**
 * Node 20.19+ and 22.12+ load an ES module through require() (`process.features.require_module`;
 * 22.11 throws ERR_REQUIRE_ESM): a CommonJS app can then run Nest 12, and `require('lockwarden')`
 * gives it the CommonJS build over that same Nest. Asked of a plain node: read in this file,
 * through Jest's own `process`, it was not true on Node 24, where a plain node says true.
 */
const requireEsm =
  execFileSync(process.execPath, ['-p', 'process.features.require_module'], { encoding: 'utf8' }).trim() === 'true';
const [nodeMajor, nodeMinor] = process.versions.node.split('.').map(Number);
/**
 * Jest's own loader does the same in a CommonJS test from Node 24.9 on (its own threshold), in
 * its vm-modules mode only: on Node 20 and 22, and without --experimental-vm-modules, it throws
 * "Must use import to load ES Module" at `require('@nestjs/testing')`.
 */
const jestRequireEsm = nodeMajor > 24 || (nodeMajor === 24 && nodeMinor >= 9);

/** A CommonJS app on Nest 12, written without a compile: decorators applied as plain calls. */
const CJS_APP = `require('reflect-metadata');
const { Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { LockModule, LockService } = require('lockwarden');
class AppModule {}
Module({ imports: [LockModule.forRoot({ redis: process.env.REDIS_URL, keyPrefix: process.env.KEY_PREFIX })] })(AppModule);
(async () => {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const token = await app.get(LockService).withLock('k', (lock) => lock.fencingToken());
  await app.close();
  console.log(JSON.stringify({ build: require.resolve('lockwarden'), token }));
})();
`;

/** The README's whole-app recipe as a CommonJS test of that app. */
const CJS_TEST = `require('reflect-metadata');
const { Module } = require('@nestjs/common');
const { Test } = require('@nestjs/testing');
const { LOCK_BACKEND, LockModule, LockService } = require('lockwarden');
const { MemoryLockBackend } = require('lockwarden/testing');
class AppModule {}
Module({ imports: [LockModule.forRoot({ redis: 'redis://127.0.0.1:1', isGlobal: true })] })(AppModule);
test('the CommonJS app runs on the in-memory backend', async () => {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
    .overrideProvider(LOCK_BACKEND)
    .useValue(new MemoryLockBackend())
    .compile();
  const app = await moduleRef.init();
  const locks = app.get(LockService);
  const held = await locks.acquire('k');
  expect(await locks.tryAcquire('k')).toBeNull();
  await held.release();
  await app.close();
});
`;

/** A CommonJS folder inside the Nest 12 install (its own package.json says so); its path. */
function cjsApp(nest12: string): string {
  const dir = join(nest12, 'cjs');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'commonjs' }));
  writeFileSync(join(dir, 'main.js'), CJS_APP);
  writeFileSync(join(dir, 'app.test.js'), CJS_TEST);
  return dir;
}

describe('the packed library', () => {
  beforeAll(() => {
    const nest11 = createApps(install(NEST11), [
      // The same entry points under node16 and for bundlers, from the same CommonJS app.
      {
        kind: CLASSIC,
        checks: [
          { module: 'node16', moduleResolution: 'node16' },
          { module: 'esnext', moduleResolution: 'bundler' },
        ],
      },
      { kind: NODENEXT, checks: [] },
    ]);
    // Its entry points are checked once terminus is back (the health entry's types need it).
    const nest12 = createApps(install(NEST12), [{ kind: ESM, checks: [] }]);
    apps = Promise.all([nest11, nest12]).then(([nest11Apps, nest12Apps]) => [...nest11Apps, ...nest12Apps]);
    apps.catch(() => undefined); // each test awaits it and reports the failure
  });

  it('works in a Nest 11 app with the classic CommonJS tsconfig', async () => {
    const kind = CLASSIC;
    const dir = (await apps)[0];
    expect(nestMajor(dir)).toMatch(/^11\./); // its entry points type-checked as it was compiled
    await bootLockAndStop(dir, kind.name);
    await runUsersJest(dir, kind);

    // A publishable package: licence and changelog in, no sources or specs.
    const installed = join(dir, '..', 'node_modules', 'lockwarden');
    expect(existsSync(join(installed, 'LICENSE'))).toBe(true);
    expect(existsSync(join(installed, 'CHANGELOG.md'))).toBe(true);
    expect(existsSync(join(installed, 'GUARANTEES.md'))).toBe(true);
    // The docs link to ../BENCHMARKS.md.
    expect(existsSync(join(installed, 'BENCHMARKS.md'))).toBe(true);
    // The docs pages the README points to, with the images they show.
    expect(existsSync(join(installed, 'docs', 'topologies.md'))).toBe(true);
    expect(existsSync(join(installed, 'docs', 'images', 'dashboard.png'))).toBe(true);
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
          "const e = new LockEngine({}, undefined, new MemoryLockBackend()); e.withLock('k', (l) => l.fencingToken()).then((t) => e.close().then(() => console.log(t)));",
      ],
      dir,
    );
    expect(Number(memory.trim())).toBeGreaterThan(0);
    // The CLI ships in the package: `npx lockwarden` runs from the installed tarball.
    const listed = run('npx', ['--no-install', 'lockwarden', 'list', '--redis', server.redis.url, '--json'], dir);
    expect(Array.isArray(JSON.parse(listed))).toBe(true);
  }, 600_000);

  it('works in a Nest 11 app with a nodenext tsconfig', async () => {
    const kind = NODENEXT;
    const dir = (await apps)[1];
    expect(nestMajor(dir)).toMatch(/^11\./);
    expect(readFileSync(join(dir, 'out', 'main.js'), 'utf8')).toContain('require("lockwarden")'); // compiled to CommonJS
    await bootLockAndStop(dir, kind.name);
    await runUsersJest(dir, kind);
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
    await runUsersJest(dir, kind);
    // terminus is an optional peer: without it everything above ran, and only the health
    // subpath asks for it.
    expect(() => run('node', ['--input-type=module', '-e', "await import('lockwarden/health')"], dir)).toThrow(
      /@nestjs\/terminus/,
    );
    restore(join(dir, '..'), NEST12);
    await typeCheckEntries(dir, kind);
    await nodeRedisOnly(dir);
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

  (requireEsm ? it : it.skip)(
    `works in a CommonJS app on Nest 12 through require(esm)${requireEsm ? '' : ' (skipped: this Node cannot require an ES module)'}`,
    async () => {
      const dir = cjsApp(join((await apps)[2], '..'));
      const prefix = `pack:cjs:${process.pid}:`;
      const out = run(process.execPath, ['main.js'], dir, {
        ...process.env,
        REDIS_URL: server.redis.url,
        KEY_PREFIX: prefix,
      });
      const result = JSON.parse(out) as { build: string; token: number };
      expect(result.build).toMatch(/\/lockwarden\/dist\/index\.js$/); // the CommonJS build, over Nest 12's ES modules
      expect(result.token).toBeGreaterThan(0);
    },
    120_000,
  );

  (jestRequireEsm ? it : it.skip)(
    `runs a CommonJS app's Jest test on Nest 12${jestRequireEsm ? '' : ' (skipped: Jest requires an ES module from Node 24.9 on)'}`,
    async () => {
      const dir = cjsApp(join((await apps)[2], '..'));
      const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '--experimental-vm-modules' };
      delete env.JEST_WORKER_ID; // the user's Jest is not one of our workers
      const jest = join(dir, '..', 'node_modules', 'jest', 'bin', 'jest.js');
      await runAsync(
        process.execPath,
        [jest, '--rootDir', dir, '--ci', '--config', '{"transform":{}}', 'app.test.js'],
        dir,
        env,
      );
    },
    120_000,
  );
});
