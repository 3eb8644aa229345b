import { once } from 'node:events';
import type { Duplex } from 'node:stream';
import { Redis } from 'ioredis';
import type { Cluster } from 'ioredis';
import { openConnection } from '../../libs/lockwarden/src/core/redis/redis-client';
import type { IoRedisConnection } from '../../libs/lockwarden/src/core/redis/ioredis-connection';
import { redisForFile } from '../harness/redis';

/**
 * ioredis listens for a socket's first error only. A TLS socket can fail twice (the certificate
 * refused, then the server's alert): the second error, with nobody listening, would be thrown
 * as an uncaught exception and end the application. The connections Lockwarden opens itself
 * keep listening; the socket's close still makes them reconnect. Both errors are emitted here
 * by hand on a real connection, as the TLS socket would.
 */
const server = redisForFile();
const quiet = { debug: () => undefined, log: () => undefined, warn: () => undefined, error: () => undefined };

async function ready(client: Redis): Promise<Duplex> {
  if (client.status !== 'ready') await once(client, 'ready');
  return (client as unknown as { stream: Duplex }).stream;
}

it("survives a second error on a socket of Lockwarden's own connection, and connects again", async () => {
  const { connection } = openConnection(server.redis.url, quiet);
  const client = (connection as IoRedisConnection).client as Redis;
  client.on('error', () => undefined);
  try {
    const stream = await ready(client);
    stream.emit('error', new Error('certificate refused'));
    expect(() => stream.emit('error', new Error('tlsv1 alert decode error'))).not.toThrow();
    stream.destroy();
    expect(await client.ping()).toBe('PONG');
    expect((client as unknown as { stream: Duplex }).stream).not.toBe(stream);
  } finally {
    await connection.close();
  }
});

it('is what a plain ioredis client lacks: its socket throws the second error', async () => {
  const client = new Redis(server.redis.url);
  client.on('error', () => undefined);
  try {
    const stream = await ready(client);
    stream.emit('error', new Error('certificate refused'));
    expect(() => stream.emit('error', new Error('tlsv1 alert decode error'))).toThrow('tlsv1 alert decode error');
  } finally {
    client.disconnect();
  }
});

it('gives the same connector to each node of a Cluster Lockwarden connects to', () => {
  const { connection } = openConnection(
    { cluster: [{ host: '127.0.0.1', port: 1 }], clusterOptions: { lazyConnect: true } },
    quiet,
  );
  const client = (connection as IoRedisConnection).client as Cluster;
  try {
    expect(client.options.redisOptions?.Connector?.name).toBe('GuardedConnector');
  } finally {
    client.disconnect();
  }
});
