import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RedisOptions } from 'ioredis';

// TLS for the harness's servers and clients, in the TLS leg of npm run test:matrix only:
// LOCKWARDEN_TEST_TLS=1 makes every redis-server the harness starts listen for TLS alone, and
// the clients it makes trust the run's throwaway CA (made by global-setup.cjs with tls-ca.cjs,
// in LOCKWARDEN_TEST_TLS_DIR). The CA is always handed to a client in its options: nothing
// here makes Node trust it process-wide (no NODE_EXTRA_CA_CERTS), so a client that was not
// given it fails, as it would in production.

/** The files of the run's test CA, when the harness runs over TLS. */
export interface TestTls {
  /** The CA certificate (PEM): what a client is given to trust the servers. */
  readonly ca: Buffer;
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
}

function load(): TestTls | undefined {
  if (process.env.LOCKWARDEN_TEST_TLS !== '1') return undefined;
  const dir = process.env.LOCKWARDEN_TEST_TLS_DIR;
  if (!dir) throw new Error('LOCKWARDEN_TEST_TLS=1 without LOCKWARDEN_TEST_TLS_DIR: the global setup makes the CA');
  const caFile = join(dir, 'ca.crt');
  return { ca: readFileSync(caFile), caFile, certFile: join(dir, 'server.crt'), keyFile: join(dir, 'server.key') };
}

/** The run's test CA when the harness runs over TLS (LOCKWARDEN_TEST_TLS=1), else undefined. */
export const testTls: TestTls | undefined = load();

/**
 * A redis-server's listening arguments: `--port <port>`, or over TLS `--port 0 --tls-port
 * <port>` (no plain port at all, so nothing passes for TLS by reaching a plain one), with the
 * server certificate; replication and a Cluster node's bus are TLS too. Clients need no
 * certificate of their own.
 */
export function serverPortArgs(port: number, clusterNode: boolean): string[] {
  if (!testTls) return ['--port', String(port)];
  return [
    '--port',
    '0',
    '--tls-port',
    String(port),
    '--tls-cert-file',
    testTls.certFile,
    '--tls-key-file',
    testTls.keyFile,
    '--tls-ca-cert-file',
    testTls.caFile,
    '--tls-auth-clients',
    'no',
    // A replica reaches its master over TLS too: there is no plain port to reach it on.
    '--tls-replication',
    'yes',
    ...(clusterNode ? ['--tls-cluster', 'yes'] : []),
  ];
}

/** `redis://` or, over TLS, `rediss://`: the scheme of the harness's server URLs. */
export const redisScheme: string = testTls ? 'rediss' : 'redis';

/** ioredis options for the harness's own (admin) clients: `options`, with the CA over TLS. */
export function adminOptions(options: RedisOptions = {}): RedisOptions {
  return testTls ? { ...options, tls: { ca: testTls.ca } } : options;
}

/** `redis-cli`'s arguments to reach a TLS server: `--tls --cacert <ca>`, or none. */
export function redisCliTlsArgs(): string[] {
  return testTls ? ['--tls', '--cacert', testTls.caFile] : [];
}
