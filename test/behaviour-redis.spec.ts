import { LockModule } from 'lockwarden';
import { describeLockBehaviour } from './behaviour/lock-behaviour';
import { engineFactory } from './harness/engines';
import { startRedis, uniquePrefix } from './harness/redis';
import type { RedisTarget } from './harness/redis';

/** The shared behaviour suite against real Redis (its twin runs it against LockTestingModule). */
let redis: RedisTarget;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis.stop();
});

const { pair } = engineFactory(() => redis.url, 'behaviour');

describeLockBehaviour('real Redis', () => ({
  pair,
  module: () => LockModule.forRoot({ redis: redis.url, keyPrefix: uniquePrefix('behaviour-nest') }),
}));
