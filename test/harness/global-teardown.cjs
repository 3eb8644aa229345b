'use strict';
const fs = require('node:fs');

module.exports = async function globalTeardown() {
  const dir = process.env.LOCKWARDEN_TEST_PIDS;
  if (!dir || !fs.existsSync(dir)) return;
  for (const name of fs.readdirSync(dir)) {
    try {
      process.kill(Number(name), 'SIGKILL');
    } catch {
      // already exited
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
};
