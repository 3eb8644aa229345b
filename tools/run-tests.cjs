#!/usr/bin/env node
// `npm test`: make sure Redis is installed, run Jest in ES-module
// mode (Nest 12 ships ES modules only), and end with one plain "N passed, N failed" line.
// Extra arguments go to Jest: `npm test -- test/mutex/mutex.spec.ts`.
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
const jestArgs = process.argv.slice(2).filter((arg) => arg !== '--package');
// Last on the command line: Jest reads every bare argument after an array option as one more of its values.
const selection = packaging
  ? [PACKAGING]
  : ['--testPathIgnorePatterns=/node_modules/', `--testPathIgnorePatterns=/${PACKAGING.replace(/\./g, '\\.')}$`];
ensureRedis();
ensureChromium();

// Valkey runs where it is installed (.ci/run installs it); elsewhere its tests are skipped, and said so here.
const valkey = spawnSync('valkey-server', ['--version'], { encoding: 'utf8' });
const valkeyLine =
  valkey.status === 0
    ? `Valkey: ${(/v=(\S+)/.exec(valkey.stdout) ?? [])[1] ?? 'installed'}, its tests run`
    : 'Valkey: valkey-server is not installed, so its tests are skipped (.ci/run installs it from bookworm-backports)';
console.log(valkeyLine);

// Valkey 9 (its own compare-and-delete) runs where tools/valkey9.sh built it (.ci/run does):
// at $VALKEY9_SERVER, or in that script's cache folder. Its path goes to the tests as VALKEY9_SERVER.
const valkey9Cache = path.join(
  process.env.VALKEY9_CACHE ||
    path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'lockwarden', 'valkey9'),
  'valkey-server',
);
const valkey9Path = process.env.VALKEY9_SERVER || valkey9Cache;
const valkey9 = spawnSync(valkey9Path, ['--version'], { encoding: 'utf8' });
const valkey9Version = valkey9.status === 0 ? (/ v=(9\.\S+)/.exec(valkey9.stdout) ?? [])[1] : undefined;
const valkey9Line = valkey9Version
  ? `Valkey 9: ${valkey9Version}, its tests run`
  : 'Valkey 9: not built here, so its tests are skipped (tools/valkey9.sh builds it; .ci/run runs that)';
console.log(valkey9Line);

const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'lockwarden-jest-')), 'report.json');
const jest = spawnSync(
  process.execPath,
  [
    '--disable-warning=ExperimentalWarning',
    '--experimental-vm-modules',
    path.join(root, 'node_modules', 'jest', 'bin', 'jest.js'),
    '--json',
    `--outputFile=${report}`,
    ...jestArgs,
    ...selection,
  ],
  { stdio: 'inherit', cwd: root, env: { ...process.env, VALKEY9_SERVER: valkey9Version ? valkey9Path : '' } },
);

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
console.log(`\n${valkeyLine}\n${valkey9Line}\n${summary}`);
process.exit(jest.status ?? 1);
