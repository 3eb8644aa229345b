#!/usr/bin/env node
// `npm test`: make sure Redis is installed, run Jest in ES-module
// mode (Nest 12 ships ES modules only), and end with one plain "N passed, N failed" line.
// Extra arguments go to Jest: `npm test -- test/mutex.spec.ts`.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ensureChromium, ensureRedis } = require('./ensure-redis.cjs');

const root = path.join(__dirname, '..');
ensureRedis();
ensureChromium();

const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'lockwarden-jest-')), 'report.json');
const jest = spawnSync(
  process.execPath,
  [
    '--disable-warning=ExperimentalWarning',
    '--experimental-vm-modules',
    path.join(root, 'node_modules', 'jest', 'bin', 'jest.js'),
    '--json',
    `--outputFile=${report}`,
    ...process.argv.slice(2),
  ],
  { stdio: 'inherit', cwd: root },
);

let summary = 'tests: no report (Jest did not finish)';
try {
  const r = JSON.parse(fs.readFileSync(report, 'utf8'));
  const skipped = r.numPendingTests + r.numTodoTests;
  summary = `tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`;
  if (r.numTotalTests === 0) summary += ' (no test ran)';
} catch {
  // keep the fallback line
}
fs.rmSync(path.dirname(report), { recursive: true, force: true });
console.log(`\n${summary}`);
process.exit(jest.status ?? 1);
