// Fills tools/ts-register.cjs's cache for every TypeScript file a child process may load, in
// this one process. Run before a test run's workers start (test/harness/global-setup.cjs): on
// a fresh clone, a dozen children starting at once would each transpile the same library.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
/** The folders children run code from; spec files run in Jest, never in a child. */
const FOLDERS = ['libs/lockwarden/src', 'apps', 'test/workers', 'test/harness', 'tools'];

/**
 * Every TypeScript source under `dir`, outside node_modules and dist. Declaration files are
 * never transpiled; spec files only when `specs` is set, since only Jest loads them.
 */
function* typeScriptFiles(dir, { specs = false } = {}) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'dist') yield* typeScriptFiles(full, { specs });
    } else if (
      entry.name.endsWith('.ts') &&
      !entry.name.endsWith('.d.ts') &&
      (specs || !entry.name.endsWith('.spec.ts'))
    ) {
      yield full;
    }
  }
}

module.exports = { typeScriptFiles };

if (require.main === module) {
  // Loaded only here: requiring ts-register installs its hook, which the Jest side must not get.
  const { transpileFile } = require('./ts-register.cjs');
  for (const folder of FOLDERS) {
    for (const file of typeScriptFiles(path.join(root, folder))) transpileFile(file);
  }
}
