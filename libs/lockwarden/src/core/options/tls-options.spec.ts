import { LockConfigError } from '../../errors';
import { LockEngine } from '../engine/lock-engine';

// A made-up certificate's shape: the checks look for PEM text, never parse it.
const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

/**
 * The TLS settings of Lockwarden's own connections (`{ url, tls }`, a Cluster's
 * `clusterOptions.redisOptions.tls`) are checked with the engine's options: a mistake is a
 * LockConfigError from the constructor, before any connection is opened, not a handshake that
 * fails at every reconnect.
 */
describe('TLS options', () => {
  const bad: [string, unknown, RegExp][] = [
    ['a URL that is not a string', { url: 6379 }, /redis\.url must be a redis:\/\/ or rediss:\/\/ URL, got 6379/],
    ['a URL without its scheme', { url: 'cache.internal:6380' }, /redis\.url must be a redis:\/\/ or rediss:\/\//],
    ['a host beside the URL', { url: 'rediss://a:6380', host: 'b' }, /redis\.host cannot be given beside redis\.url/],
    [
      'TLS options with a plain URL',
      { url: 'redis://a:6379', tls: { ca: PEM } },
      /write rediss:\/\/ for a TLS connection/,
    ],
    [
      'a CA given as a file path',
      { url: 'rediss://a:6380', tls: { ca: '/etc/redis/ca.crt' } },
      /redis\.tls\.ca must hold the PEM text itself/,
    ],
    ['a CA of another type', { url: 'rediss://a:6380', tls: { ca: 42 } }, /redis\.tls\.ca must be PEM text .* got 42/],
    ['tls that is a number', { host: 'a', tls: 1 }, /redis\.tls must be Node's TLS options/],
    [
      "a Cluster's node CA as a path",
      { cluster: [{ host: 'a', port: 7000 }], clusterOptions: { redisOptions: { tls: { ca: ['ca.pem'] } } } },
      /redis\.clusterOptions\.redisOptions\.tls\.ca must hold the PEM text itself/,
    ],
  ];

  it.each(bad)('%s is a LockConfigError from the constructor', (_name, redis, message) => {
    const make = (): LockEngine => new LockEngine({ redis } as never);
    expect(make).toThrow(LockConfigError);
    expect(make).toThrow(message);
  });

  it('takes a rediss:// URL with a CA beside it, and a Cluster with one for its nodes', async () => {
    // Nothing listens on port 1: the engines are made and closed, never used.
    const one = new LockEngine({ redis: { url: 'rediss://127.0.0.1:1', tls: { ca: Buffer.from(PEM) } } });
    const cluster = new LockEngine({
      redis: { cluster: [{ host: '127.0.0.1', port: 1 }], clusterOptions: { redisOptions: { tls: { ca: [PEM] } } } },
    });
    await Promise.all([one.close(), cluster.close()]);
  });
});
