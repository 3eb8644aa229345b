import { LockModule } from 'lockwarden';
import { describeLockBehaviour } from '../behaviour/lock-behaviour';
import { engineFactory } from '../harness/engines';
import { CLIENT_KINDS } from '../harness/clients';
import { redisForFile, uniquePrefix } from '../harness/redis';

/**
 * The shared behaviour suite against real Redis (its twin runs it against LockTestingModule),
 * through each client: ioredis (Lockwarden connects from a URL) and node-redis (a client the
 * application made, given as `client`).
 */
const server = redisForFile();

describe.each(CLIENT_KINDS)('through %s', (kind) => {
  const { pair, topology } = engineFactory(() => server.redis.url, `behaviour-${kind}`, kind);

  describeLockBehaviour(`real Redis (${kind})`, () => ({
    pair,
    module: () =>
      LockModule.forRoot({ ...topology(server.redis.url), keyPrefix: uniquePrefix(`behaviour-nest-${kind}`) }),
  }));
});
