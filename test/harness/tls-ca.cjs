// A throwaway certificate authority and a server certificate it signed, made with `openssl`
// for one test run (the TLS leg of npm run test:matrix): the TLS servers the harness starts
// present the certificate, and the clients trust the CA only because a test hands it to them.
// Nothing here is kept or committed: the folder lives in the system's temp dir and the
// global teardown removes it.
'use strict';
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/** The files of the test CA, by name, in the folder makeTestCa returns. */
const FILES = { ca: 'ca.crt', cert: 'server.crt', key: 'server.key' };

function openssl(args, cwd) {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/**
 * Makes a CA and a server certificate for 127.0.0.1 (an IP SAN: the harness reaches every
 * server by that address, and TLS clients check the address against it) in a new temp folder,
 * and returns the folder. P-256 keys: quick to make and to handshake with.
 */
function makeTestCa() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lockwarden-tls-'));
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    ['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', FILES.ca, '-days', '2', '-subj', '/CN=Lockwarden test CA'],
    dir,
  );
  openssl(['req', '-new', ...ec, '-keyout', FILES.key, '-out', 'server.csr', '-subj', '/CN=127.0.0.1'], dir);
  fs.writeFileSync(path.join(dir, 'server.ext'), 'subjectAltName = IP:127.0.0.1, DNS:localhost\n');
  openssl(
    [
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      FILES.ca,
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      FILES.cert,
      '-days',
      '2',
      '-extfile',
      'server.ext',
    ],
    dir,
  );
  // redis-server reads the key as whatever user runs it; the folder is private to this run.
  fs.chmodSync(path.join(dir, FILES.key), 0o600);
  return dir;
}

/** Whether this machine can run the TLS tests: openssl, and a redis-cli (so a redis-server build) with TLS. */
function tlsAvailable() {
  if (spawnSync('openssl', ['version']).status !== 0) return { ok: false, why: 'openssl is not installed' };
  const cli = spawnSync('redis-cli', ['--help'], { encoding: 'utf8' });
  // redis-cli lists --tls only when built with it, as Debian's redis-server and redis-tools are.
  if (!/--tls\b/.test(`${cli.stdout}${cli.stderr}`))
    return { ok: false, why: 'redis-server/redis-cli are built without TLS' };
  return { ok: true };
}

module.exports = { FILES, makeTestCa, tlsAvailable };
