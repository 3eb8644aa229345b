// Valkey GLIDE as a third client: the shared behaviour suite through GlideClient on one
// server, Redis 7 and (where built) Valkey 9, plus what GLIDE refuses.
import { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import { LockConfigError, LockEngine, LockModule } from 'lockwarden';
import type { LockEngineOptions } from 'lockwarden';
import { describeLockBehaviour } from './behaviour/lock-behaviour';
import { closeNow } from './harness/engines';
import { startRedis, uniquePrefix, valkey9 } from './harness/redis';
import type { RedisTarget, ServerKind } from './harness/redis';

const SERVERS: [string, ServerKind][] = [
  ['Redis 7', 'redis'],
  ...(valkey9 ? [['Valkey 9', 'valkey9'] as [string, ServerKind]] : []),
];

describe.each(SERVERS)('through a GLIDE client, on %s', (name, server) => {
  let target: RedisTarget;
  const clients: GlideClient[] = [];
  const engines: LockEngine[] = [];

  beforeAll(async () => {
    target = await startRedis({ own: true, server });
    const { host, port } = target.process!;
    // One client per engine: an engine reads its client's pub/sub messages.
    for (let i = 0; i < 3; i++) clients.push(await GlideClient.createClient({ addresses: [{ host, port }] }));
  });

  afterEach(async () => {
    await Promise.all(engines.splice(0).map(closeNow));
  });

  afterAll(async () => {
    for (const c of clients.splice(0)) c.close();
    await target.stop();
  });

  const pair = (options: Partial<LockEngineOptions> = {}): [LockEngine, LockEngine] => {
    const keyPrefix = uniquePrefix(`glide-${server}`);
    const made = [0, 1].map((i) => new LockEngine({ client: clients[i], keyPrefix, ...options })) as [
      LockEngine,
      LockEngine,
    ];
    engines.push(...made);
    return made;
  };

  it('takes, hands over and releases a lock between two engines, each on its own GLIDE client', async () => {
    const [a, b] = pair();
    const held = await a.acquire('k');
    const token = await held.fencingToken();
    const waiting = b.acquire('k', { waitMs: 30_000 });
    await held.release();
    const got = await waiting;
    expect(await got.fencingToken()).toBeGreaterThan(token);
    expect(await got.release()).toBe(true);
  });

  describeLockBehaviour(`GLIDE on ${name}`, () => ({
    pair,
    module: () => LockModule.forRoot({ client: clients[2], keyPrefix: uniquePrefix(`glide-nest-${server}`) }),
  }));
});

describe('a GLIDE cluster client', () => {
  it('is refused with LockConfigError before anything touches a server', () => {
    // The prototype alone: a cluster client is told by its methods, and none is called.
    const cluster = Object.create(GlideClusterClient.prototype) as GlideClusterClient;
    expect(() => new LockEngine({ client: cluster })).toThrow(LockConfigError);
    expect(() => new LockEngine({ client: cluster })).toThrow(/GlideClusterClient/);
  });
});
