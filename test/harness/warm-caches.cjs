// Fills both transpile caches once, before Jest's workers start. On a fresh clone they are
// empty: six workers would each transpile the library with ts-jest, and a dozen child
// processes starting at once would each transpile it again through tools/ts-register.cjs.
// On a warm checkout this only hashes the files and finds them cached.
'use strict';
const { spawn } = require('node:child_process');
const path = require('node:path');

const { typeScriptFiles } = require('../../tools/ts-warm.cjs');

const root = path.join(__dirname, '..', '..');
/** The options jest-runtime transforms an ES module with: the cache key includes them. */
const ESM_OPTIONS = {
  isInternalModule: false,
  supportsDynamicImport: true,
  supportsExportNamespaceFrom: true,
  supportsStaticESM: true,
  supportsTopLevelAwait: true,
};

/** The children's cache, in a process of its own so it runs beside the Jest part. */
function warmChildCache() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'tools', 'ts-warm.cjs')], {
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`tools/ts-warm.cjs exited with ${code}:\n${stderr}`)),
    );
  });
}

/** Jest's transform cache, for every TypeScript file the specs may import, with `projectConfig`'s transformer. */
async function warmJestCache(globalConfig, projectConfig) {
  const { createScriptTransformer } = require('@jest/transform');
  const transformer = await createScriptTransformer(projectConfig);
  const options = {
    ...ESM_OPTIONS,
    collectCoverage: globalConfig.collectCoverage,
    collectCoverageFrom: globalConfig.collectCoverageFrom,
    coverageProvider: globalConfig.coverageProvider,
  };
  for (const folder of ['libs/lockwarden/src', 'test', 'apps']) {
    for (const file of typeScriptFiles(path.join(root, folder), { specs: true })) {
      if (transformer.shouldTransform(file)) await transformer.transformAsync(file, options);
    }
  }
}

/** Fills both caches; they are filled side by side. */
module.exports = async function warmCaches(globalConfig, projectConfig) {
  await Promise.all([warmChildCache(), warmJestCache(globalConfig, projectConfig)]);
};
