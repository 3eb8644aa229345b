// Fills tools/ts-register.cjs's cache for every TypeScript file a child process may load, in
// this one process. Run before a test run's workers start (test/harness/global-setup.cjs): on
// a fresh clone, a dozen children starting at once would each transpile the same library.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { transpileFile } = require('./ts-register.cjs');

const root = path.join(__dirname, '..');
/** The folders children run code from; spec files run in Jest, never in a child. */
const FOLDERS = ['libs/lockwarden/src', 'apps', 'test/workers', 'test/harness', 'tools'];

function* typeScriptFiles(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'dist') yield* typeScriptFiles(full);
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') && !entry.name.endsWith('.d.ts')) {
      yield full;
    }
  }
}

for (const folder of FOLDERS) {
  for (const file of typeScriptFiles(path.join(root, folder))) transpileFile(file);
}
