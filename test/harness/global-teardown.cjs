'use strict';
const fs = require('node:fs');

module.exports = async function globalTeardown() {
  // The TLS leg's CA, when the setup made it (one given from outside stays).
  if (process.env.LOCKWARDEN_TEST_TLS_MADE === '1' && process.env.LOCKWARDEN_TEST_TLS_DIR) {
    fs.rmSync(process.env.LOCKWARDEN_TEST_TLS_DIR, { recursive: true, force: true });
  }
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
