#!/usr/bin/env node
// Makes sure redis-server is on this machine before tests, the demo or the benchmark start
// their own throwaway servers. On Debian as root it installs Debian's packages itself;
// elsewhere it stops with the one command to run. Skipped when REDIS_URL names a server.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');

const PACKAGES = ['redis-server', 'redis-sentinel', 'redis-tools'];
const INSTALL = `apt-get install -y ${PACKAGES.join(' ')}`;

function has(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

function missing() {
  return ['redis-server', 'redis-sentinel', 'redis-cli'].filter((cmd) => !has(cmd));
}

function ensureRedis({ needed = true } = {}) {
  if (!needed) return;
  const absent = missing();
  if (absent.length === 0) return;
  const isDebian = fs.existsSync('/etc/debian_version');
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isDebian || !isRoot || !has('apt-get')) {
    console.error(
      `Lockwarden needs ${absent.join(', ')} to start throwaway Redis servers, and ${absent.length > 1 ? 'they are' : 'it is'} missing.\n` +
        `Install ${PACKAGES.join(', ')} (on Debian/Ubuntu: sudo ${INSTALL}), or set REDIS_URL to a Redis you run.`,
    );
    process.exit(1);
  }
  console.log(`Installing ${PACKAGES.join(', ')} with apt-get (missing: ${absent.join(', ')}) ...`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', ...PACKAGES],
  ]) {
    const r = spawnSync('apt-get', args, { stdio: 'inherit', env });
    if (r.status !== 0) {
      console.error(
        `apt-get ${args.join(' ')} failed (exit ${r.status}). Run "${INSTALL}" yourself, or set REDIS_URL.`,
      );
      process.exit(1);
    }
  }
  const still = missing();
  if (still.length > 0) {
    console.error(`Still missing after apt-get: ${still.join(', ')}.`);
    process.exit(1);
  }
  console.log('Redis installed.');
}

/**
 * The dashboard's browser test drives Debian's Chromium (playwright-core downloads no
 * browser). Installed like Redis when missing; CHROMIUM_PATH names another build.
 */
function ensureChromium() {
  const path = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (fs.existsSync(path)) return;
  const isDebian = fs.existsSync('/etc/debian_version');
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isDebian || !isRoot || !has('apt-get')) {
    console.error(
      `The dashboard's browser test needs Chromium at ${path}, and it is missing.\n` +
        'Install it (on Debian: sudo apt-get install -y chromium), or set CHROMIUM_PATH to a Chromium or Chrome binary.',
    );
    process.exit(1);
  }
  console.log('Installing chromium with apt-get (for the dashboard browser test) ...');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', 'chromium'],
  ]) {
    const r = spawnSync('apt-get', args, { stdio: 'inherit', env });
    if (r.status !== 0) {
      console.error(`apt-get ${args.join(' ')} failed (exit ${r.status}). Run "apt-get install -y chromium" yourself.`);
      process.exit(1);
    }
  }
}

module.exports = { ensureRedis, ensureChromium };

if (require.main === module) {
  // With REDIS_URL the tests still start private servers for crash and restart tests.
  ensureRedis();
}
