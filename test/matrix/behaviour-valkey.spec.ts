import { LockModule } from 'lockwarden';
import { describeLockBehaviour } from '../behaviour/lock-behaviour';
import { engineFactory } from '../harness/engines';
import { describeOnValkey, redisForFile, uniquePrefix } from '../harness/redis';

/**
 * The shared behaviour suite against Valkey (8.0, from Debian's bookworm-backports), as
 * behaviour-redis.spec.ts runs it against Redis: a cell of the matrix's "every cell" leg
 * (npm test runs Valkey's own checks in test/topologies/valkey.spec.ts). Skipped where
 * valkey-server is not installed.
 */
describeOnValkey('on Valkey', () => {
  const valkey = redisForFile({ server: 'valkey' });
  const { pair } = engineFactory(() => valkey.redis.url, 'behaviour-valkey');

  it('runs against a server that says it is Valkey', async () => {
    expect(await valkey.admin.info('server')).toMatch(/^server_name:valkey\r?$/m);
  });

  describeLockBehaviour('Valkey', () => ({
    pair,
    module: () => LockModule.forRoot({ redis: valkey.redis.url, keyPrefix: uniquePrefix('behaviour-valkey-nest') }),
  }));
});
