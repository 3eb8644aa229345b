import { LeadershipRegistry, LockEngine } from 'lockwarden/core';
import { LockLostError } from 'lockwarden/errors';
import { FaultProxy } from '../harness/fault-proxy';
import { redisForFile, uniquePrefix } from '../harness/redis';

/**
 * A leader cut off from Redis by a partition: it cannot renew its term, so its signal must
 * abort (and `lost` fire) before the other instance is elected, and the new term's token
 * is higher. Both instances live in this process, so the order of what each one is told is
 * the order in which it happened.
 */
const server = redisForFile({ own: true });
let proxy: FaultProxy;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  const { host, port } = server.redis.process!;
  proxy = await FaultProxy.start({ host, port });
  server.atEnd(
    () => proxy.stop(),
    async () => {
      proxy.pass();
      for (const close of closers.reverse()) await close().catch(() => undefined);
    },
  );
});

function instance(url: string, keyPrefix: string, instanceId: string): LeadershipRegistry {
  const engine = new LockEngine({ redis: url, keyPrefix, leaseMs: 1_500, instanceId });
  const registry = new LeadershipRegistry(engine);
  closers.push(
    () => engine.close(),
    () => registry.close(),
  );
  return registry;
}

describe('a leader cut off by a partition', () => {
  it('is told it lost leadership before anyone else is elected; the next term has a higher token', async () => {
    const keyPrefix = uniquePrefix('leader-partition');
    const cutOff = instance(proxy.url, keyPrefix, 'cut-off').leadership('billing');
    const healthy = instance(server.redis.url, keyPrefix, 'healthy').leadership('billing');
    const order: string[] = [];

    await cutOff.campaign();
    const first = cutOff.currentTerm!;
    const signal = cutOff.signal;
    signal.addEventListener('abort', () => order.push('cut-off lost'));
    healthy.onChange((change) => {
      if (change === 'gained') order.push('healthy gained');
    });
    const standby = healthy.campaign();

    proxy.blackhole();
    await standby;

    expect(order).toEqual(['cut-off lost', 'healthy gained']);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect(cutOff.isLeader()).toBe(false);
    expect(healthy.currentTerm!.fencingToken).toBeGreaterThan(first.fencingToken);
    expect((await healthy.leader())?.instanceId).toBe('healthy');
  });
});
