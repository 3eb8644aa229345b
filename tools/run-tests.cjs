#!/usr/bin/env node
// `npm test`: make sure Redis is installed, run Jest in ES-module
// mode (Nest 12 ships ES modules only), and end with one plain "N passed, N failed" line.
// Extra arguments go to Jest: `npm test -- test/mutex/mutex.spec.ts`.
// `npm run test:matrix` (--matrix) runs the legs of tools/matrix-legs.cjs: spec files again on
// other servers (Redis 8, TLS), each leg one Jest run, beside npm test and never in it.
// `npm run test:package` (this script with --package) runs the packed-library check alone: it
// builds, packs and installs the library into fresh Nest 11 and Nest 12 apps, which takes as
// long as the rest of the suite together, so `npm test` leaves it out.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ensureChromium, ensureRedis } = require('./ensure-redis.cjs');

const root = path.join(__dirname, '..');
const PACKAGING = 'test/tooling/packaging.spec.ts';
const packaging = process.argv.includes('--package');
const matrix = process.argv.includes('--matrix');
const jestArgs = process.argv.slice(2).filter((arg) => arg !== '--package' && arg !== '--matrix');
// Last on the command line: Jest reads every bare argument after an array option as one more of its values.
const selection = packaging
  ? [PACKAGING]
  : [
      '--testPathIgnorePatterns=/node_modules/',
      `--testPathIgnorePatterns=/${PACKAGING.replace(/\./g, '\\.')}$`,
      // The matrix's own specs run only in its legs (npm run test:matrix).
      '--testPathIgnorePatterns=/test/matrix/',
    ];
ensureRedis();
ensureChromium();

// Valkey runs where it is installed (.ci/run installs it); elsewhere its tests are skipped, and said so here.
const valkey = spawnSync('valkey-server', ['--version'], { encoding: 'utf8' });
const valkeyLine =
  valkey.status === 0
    ? `Valkey: ${(/v=(\S+)/.exec(valkey.stdout) ?? [])[1] ?? 'installed'}, its tests run`
    : 'Valkey: valkey-server is not installed, so its tests are skipped (.ci/run installs it from bookworm-backports)';
console.log(valkeyLine);

/**
 * A server one of tools/' scripts builds into a cache folder (.ci/run runs them): at $<env>, or
 * in that script's cache folder ($<env>_CACHE, else ~/.cache/lockwarden/<folder>). Gives its
 * path and version when it is there and of the version `pattern` matches (its first group).
 */
function builtServer(env, folder, binary, pattern) {
  const cache = path.join(
    process.env[`${env}_CACHE`] ||
      path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'lockwarden', folder),
    binary,
  );
  const where = process.env[`${env}_SERVER`] || cache;
  const run = spawnSync(where, ['--version'], { encoding: 'utf8' });
  const version = run.status === 0 ? (pattern.exec(run.stdout) ?? [])[1] : undefined;
  return { path: where, version };
}

// Valkey 9 (its own compare-and-delete) runs where tools/valkey9.sh built it. Its path goes to
// the tests as VALKEY9_SERVER.
const { path: valkey9Path, version: valkey9Version } = builtServer(
  'VALKEY9',
  'valkey9',
  'valkey-server',
  / v=(9\.\S+)/,
);
const valkey9Line = valkey9Version
  ? `Valkey 9: ${valkey9Version}, its tests run`
  : 'Valkey 9: not built here, so its tests are skipped (tools/valkey9.sh builds it; .ci/run runs that)';
console.log(valkey9Line);

// Redis 8.6 (its own compare-and-delete, DELEX IFEQ) runs where tools/redis8.sh built it. Its
// tests are the Redis 8.6 leg of the matrix, never npm test's; its path goes to them as REDIS8_SERVER.
const { path: redis8Path, version: redis8Version } = builtServer('REDIS8', 'redis8', 'redis-server', / v=(8\.6\.\S+)/);
const redis8Line = redis8Version
  ? `Redis 8: ${redis8Version}, its tests run in npm run test:matrix`
  : 'Redis 8: not built here, so its tests are skipped (tools/redis8.sh builds it; .ci/run runs that)';
console.log(redis8Line);

/** The slowest tests and files, so a slow suite says where its time goes. */
function slowest(r) {
  const rel = (file) => path.relative(root, file);
  const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
  const tests = r.testResults
    .flatMap((file) =>
      file.assertionResults
        .filter((t) => t.status === 'passed' || t.status === 'failed')
        .map((t) => ({ name: t.fullName, file: rel(file.name), ms: t.duration ?? 0 })),
    )
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 10);
  const files = r.testResults
    .map((file) => ({ file: rel(file.name), ms: file.endTime - file.startTime }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 5);
  if (tests.length === 0) return '';
  return [
    'slowest tests:',
    ...tests.map((t) => `  ${String(t.ms).padStart(7)} ms  ${t.name}  (${t.file})`),
    'slowest files:',
    ...files.map((f) => `  ${seconds(f.ms).padStart(8)}  ${f.file}`),
  ].join('\n');
}

/**
 * Runs Jest once (ES-module mode) with `args` and extra `env`; gives its exit status and a
 * summary line ("tests: N passed, N failed"), after printing the slowest tests and files.
 */
function runJest(args, env = {}) {
  const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'lockwarden-jest-')), 'report.json');
  const jest = spawnSync(
    process.execPath,
    [
      '--disable-warning=ExperimentalWarning',
      '--experimental-vm-modules',
      path.join(root, 'node_modules', 'jest', 'bin', 'jest.js'),
      '--json',
      `--outputFile=${report}`,
      ...args,
    ],
    {
      stdio: 'inherit',
      cwd: root,
      env: {
        ...process.env,
        VALKEY9_SERVER: valkey9Version ? valkey9Path : '',
        REDIS8_SERVER: redis8Version ? redis8Path : '',
        ...env,
      },
    },
  );
  let summary = 'tests: no report (Jest did not finish)';
  try {
    const r = JSON.parse(fs.readFileSync(report, 'utf8'));
    // LOCKWARDEN_TEST_REPORT=<file> keeps Jest's JSON report, e.g. to compare runs.
    if (process.env.LOCKWARDEN_TEST_REPORT) fs.copyFileSync(report, process.env.LOCKWARDEN_TEST_REPORT);
    const top = slowest(r);
    if (top) console.log(`\n${top}`);
    const skipped = r.numPendingTests + r.numTodoTests;
    summary = `tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`;
    if (r.numTotalTests === 0) summary += ' (no test ran)';
  } catch {
    // keep the fallback line
  }
  fs.rmSync(path.dirname(report), { recursive: true, force: true });
  return { status: jest.status ?? 1, summary };
}

if (matrix) {
  // The matrix: the same spec files again, on other servers (tools/matrix-legs.cjs). Each leg
  // is one Jest run with its own environment; a leg whose server is not here says so and is
  // left out, and the run fails if any leg that ran failed.
  const lines = [];
  let status = 0;
  const found = {
    root,
    valkey9Path: valkey9Version ? valkey9Path : '',
    redis8Path: redis8Version ? redis8Path : '',
  };
  for (const leg of require('./matrix-legs.cjs').legs(found)) {
    const here = leg.available();
    if (!here.ok) {
      lines.push(`${leg.name}: ${here.why}, so its leg is skipped`);
      continue;
    }
    console.log(`\n=== ${leg.name}: ${leg.what} ===`);
    const run = runJest([...leg.args, ...jestArgs], leg.env);
    lines.push(`${leg.name}: ${run.summary}`);
    if (run.status !== 0) status = run.status;
  }
  console.log(`\n${lines.join('\n')}`);
  process.exit(lines.length === 0 ? 1 : status);
}

const run = runJest([...jestArgs, ...selection]);
console.log(`\n${valkeyLine}\n${valkey9Line}\n${redis8Line}\n${run.summary}`);
process.exit(run.status);
