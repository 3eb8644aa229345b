// Every test worker registers the Redis processes it starts in one folder per run;
// the teardown kills whatever a crashed worker left behind.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

module.exports = async function globalSetup() {
  process.env.LOCKWARDEN_TEST_PIDS = fs.mkdtempSync(path.join(os.tmpdir(), 'lockwarden-pids-'));
};
