// Every test worker registers the Redis processes it starts in one folder per run;
// the teardown kills whatever a crashed worker left behind.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const warmCaches = require('./warm-caches.cjs');

module.exports = async function globalSetup(globalConfig, projectConfig) {
  process.env.LOCKWARDEN_TEST_PIDS = fs.mkdtempSync(path.join(os.tmpdir(), 'lockwarden-pids-'));
  // The TLS leg of npm run test:matrix: one throwaway CA for the whole run, which the workers
  // find through the environment (test/harness/tls.ts); the teardown removes it.
  if (process.env.LOCKWARDEN_TEST_TLS === '1' && !process.env.LOCKWARDEN_TEST_TLS_DIR) {
    process.env.LOCKWARDEN_TEST_TLS_DIR = require('./tls-ca.cjs').makeTestCa();
    process.env.LOCKWARDEN_TEST_TLS_MADE = '1';
  }
  await warmCaches(globalConfig, projectConfig);
};
