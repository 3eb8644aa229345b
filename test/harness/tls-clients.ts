import type { RedisTarget } from '../../libs/lockwarden/src/core/redis/redis-client';
import { testTls } from './tls';

// What each client is given to reach the harness's servers over TLS (the TLS matrix leg), in
// that client's own options, as an application with a private CA would write them
// (docs/configuration.md, "TLS"); outside that leg, nothing.

/** Where Lockwarden's own ioredis client connects: the URL or Cluster nodes, with the CA over TLS. */
export function ioredisTarget(where: string | { cluster: { host: string; port: number }[] }): RedisTarget {
  if (!testTls) return where;
  const tls = { ca: testTls.ca };
  return typeof where === 'string'
    ? { url: where, tls }
    : { cluster: where.cluster, clusterOptions: { redisOptions: { tls } } };
}

/** node-redis's socket options over TLS (`createClient`, or a Cluster's `defaults`), else undefined. */
export function nodeRedisTls(): { socket: { tls: true; ca: Buffer } } | undefined {
  return testTls && { socket: { tls: true, ca: testTls.ca } };
}

/** Valkey GLIDE's TLS settings (GlideClient or GlideClusterClient): TLS, trusting the test CA. */
export function glideTls():
  | { useTLS: true; advancedConfiguration: { tlsAdvancedConfiguration: { rootCertificates: Buffer } } }
  | Record<string, never> {
  if (!testTls) return {};
  return { useTLS: true, advancedConfiguration: { tlsAdvancedConfiguration: { rootCertificates: testTls.ca } } };
}
