import { LockModule } from 'lockwarden';
import { describeLockBehaviour } from '../behaviour/lock-behaviour';
import { engineFactory } from '../harness/engines';
import { describeOnValkey, startRedis, uniquePrefix } from '../harness/redis';
import type { RedisTarget } from '../harness/redis';

/**
 * The shared behaviour suite against Valkey (8.0, from Debian's bookworm-backports), as
 * behaviour-redis.spec.ts runs it against Redis. Skipped where valkey-server is not
 * installed; npm test says so in one line.
 */
let valkey: RedisTarget;
const { pair } = engineFactory(() => valkey.url, 'behaviour-valkey');

describeOnValkey('on Valkey', () => {
  beforeAll(async () => {
    valkey = await startRedis({ server: 'valkey' });
  });

  afterAll(async () => {
    await valkey.stop();
  });

  it('runs against a server that says it is Valkey', async () => {
    const client = valkey.client();
    try {
      expect(await client.info('server')).toMatch(/^server_name:valkey\r?$/m);
    } finally {
      client.disconnect();
    }
  });

  describeLockBehaviour('Valkey', () => ({
    pair,
    module: () => LockModule.forRoot({ redis: valkey.url, keyPrefix: uniquePrefix('behaviour-valkey-nest') }),
  }));
});
