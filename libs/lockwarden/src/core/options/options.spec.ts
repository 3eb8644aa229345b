import { Redis } from 'ioredis';
import {
  LockAbortedError,
  LockBackendError,
  LockConfigError,
  LockInterruptedError,
  LockLostError,
  LockTimeoutError,
  LockUpgradeError,
} from '../../errors';
import { LockEngine } from '../engine/lock-engine';
import { describe as describeValue, describeKey } from './validate';
import { checkKey } from '../backend/lock-keys';

const throwingKey = {
  toString(): string {
    throw new Error('toString must never be called');
  },
};
const revokedProxy = (() => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
})();

/**
 * Bad input is refused before anything reaches Redis. The engine's client is a
 * real one that has never connected (lazyConnect): any command at all would
 * make it connect, so its status proves nothing was sent.
 */
describe('bad input', () => {
  let client: Redis;
  let engine: LockEngine;

  beforeAll(() => {
    client = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true });
    engine = new LockEngine({ client });
  });

  afterAll(async () => {
    await engine.close();
    client.disconnect();
  });

  const calls: [string, () => Promise<unknown>, RegExp][] = [
    ['empty key', () => engine.acquire(''), /must not be empty/],
    ['number key', () => engine.acquire(42 as never), /must be a string/],
    ['null key', () => engine.tryAcquire(null as never), /must be a string/],
    ['1025-char key', () => engine.acquire('k'.repeat(1025)), /limit is 1024/],
    ['leaseMs below 10', () => engine.acquire('k', { leaseMs: 9 }), /leaseMs must be an integer from 10 to 2147483647/],
    ['fractional leaseMs', () => engine.acquire('k', { leaseMs: 100.5 }), /leaseMs/],
    ['NaN leaseMs', () => engine.acquire('k', { leaseMs: NaN }), /leaseMs/],
    ['infinite leaseMs', () => engine.acquire('k', { leaseMs: Infinity }), /leaseMs/],
    ['leaseMs over 2^31-1', () => engine.acquire('k', { leaseMs: 2 ** 31 }), /leaseMs/],
    ['string leaseMs', () => engine.acquire('k', { leaseMs: '100' as never }), /leaseMs.*"100"/],
    ['non-boolean renew', () => engine.acquire('k', { renew: 0 as never }), /renew must be a boolean/],
    [
      'the removed ttlMs (now leaseMs with renew: false)',
      () => engine.acquire('k', { ttlMs: 100 } as never),
      /Unknown acquire option "ttlMs" \(for a lease that is not renewed, write \{ leaseMs: n, renew: false \}\)/,
    ],
    ['negative waitMs', () => engine.acquire('k', { waitMs: -1 }), /waitMs must be an integer from 0 to 2147483647/],
    ['fractional waitMs', () => engine.acquire('k', { waitMs: 0.5 }), /waitMs/],
    ['misspelt option', () => engine.acquire('k', { waitMS: 10 } as never), /Unknown acquire option "waitMS"/],
    ['non-signal signal', () => engine.acquire('k', { signal: {} as AbortSignal }), /signal must be an AbortSignal/],
    ['non-boolean fair', () => engine.acquire('k', { fair: 'yes' as never }), /fair must be a boolean/],
    ['options not an object', () => engine.acquire('k', 'fast' as never), /options must be an object/],
    ['withLock without a function', () => engine.withLock('k', 'run' as never), /needs a function/],
    ['tryAcquire with a typo', () => engine.tryAcquire('k', { ttl: 100 } as never), /Unknown acquire option "ttl"/],
    [
      'null-prototype key',
      () => engine.withLock(Object.create(null) as string, () => 1),
      /must be a string, got object/,
    ],
    ['key whose toString throws', () => engine.acquire(throwingKey as never), /must be a string, got object/],
    ['revoked proxy as key', () => engine.acquireRead(revokedProxy as never), /must be a string, got object/],
    ['symbol key', () => engine.inspect(Symbol('k') as never), /must be a string, got symbol/],
    ['lone high surrogate', () => engine.acquire('a\uD800'), /"a\\ud800" contains a lone UTF-16 surrogate/],
    ['lone low surrogate', () => engine.withWriteLock('a\uDC00', () => 1), /lone UTF-16 surrogate/],
    ['pair halves in the wrong order', () => engine.forceUnlock('\uDC00\uD800'), /lone UTF-16 surrogate/],
    [
      '1 MiB option name',
      () => engine.acquire('k', { ['o'.repeat(2 ** 20)]: 1 } as never),
      /"o{200}…" \(1048576 characters\)/,
    ],
  ];

  it.each(calls)('%s is rejected with LockConfigError', async (_name, call, message) => {
    const err = await call().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockConfigError);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message.length).toBeLessThan(400);
  });

  const settings: [string, Record<string, unknown>, RegExp][] = [
    ['missing redis', {}, /redis option is required/],
    ['non-URL string', { redis: 'localhost:6380' }, /redis:\/\/ or rediss:\/\/ URL/],
    [
      'redis and client both',
      { redis: 'redis://127.0.0.1:1', client: {} },
      /Give one of redis, client and quorum, not redis and client/,
    ],
    [
      'a client as redis',
      { redis: { duplicate: () => undefined, evalsha: () => undefined } },
      /pass a client you own as client instead/,
    ],
    [
      'a URL as client',
      { client: 'redis://127.0.0.1:1' },
      /client must be a Redis client you own \(ioredis Redis or Cluster, node-redis createClient.*got "redis:/,
    ],
    ['a number for redis', { redis: 6380 }, /redis must be a redis:\/\/ URL, an ioredis options object.*got 6380/],
    ['an empty cluster', { redis: { cluster: [] } }, /redis\.cluster must be a non-empty list/],
    [
      'a non-URL quorum node',
      { quorum: { nodes: ['redis://127.0.0.1:1', 'redis://127.0.0.1:2', 'localhost:3'] } },
      /each quorum node must be a redis:\/\/ or rediss:\/\/ URL/,
    ],
    ['leaseMs below 10', { redis: 'redis://127.0.0.1:1', leaseMs: 5 }, /leaseMs must be an integer from 10/],
    ['negative waitMs', { redis: 'redis://127.0.0.1:1', waitMs: -5 }, /waitMs must be an integer from 0/],
    ['misspelt option', { redis: 'redis://127.0.0.1:1', leaseMS: 100 }, /Unknown lock module option "leaseMS"/],
    ['numeric keyPrefix', { redis: 'redis://127.0.0.1:1', keyPrefix: 5 }, /keyPrefix must be a string/],
    ['empty instanceId', { redis: 'redis://127.0.0.1:1', instanceId: '' }, /instanceId must be a non-empty string/],
    ['placeMs below 300', { redis: 'redis://127.0.0.1:1', placeMs: 100 }, /placeMs must be an integer from 300/],
    ['negative safetyMarginMs', { redis: 'redis://127.0.0.1:1', safetyMarginMs: -1 }, /safetyMarginMs/],
    ['non-function onEvent', { redis: 'redis://127.0.0.1:1', onEvent: 'log' }, /onEvent must be a function/],
    ['keyPrefix with a lone surrogate', { redis: 'redis://127.0.0.1:1', keyPrefix: 'app\uD800:' }, /lone UTF-16/],
  ];

  it.each(settings)('engine setting: %s is rejected with LockConfigError', (_name, options, message) => {
    expect(() => new LockEngine(options as never)).toThrow(LockConfigError);
    expect(() => new LockEngine(options as never)).toThrow(message);
  });

  it('sent nothing to Redis for any of them', () => {
    expect(client.status).toBe('wait');
  });
});

describe('checkKey', () => {
  it('accepts well-formed text, astral characters included', () => {
    expect(checkKey('emoji:\u{1F600}:ok')).toBe('emoji:\u{1F600}:ok');
    expect(checkKey('k'.repeat(1024))).toHaveLength(1024);
  });

  it('tells apart keys that Redis would merge: each lone surrogate is refused, not replaced', () => {
    for (const key of ['a\uD800', 'a\uDC00', 'x\uD83D', '\uDE00x']) {
      expect(() => checkKey(key)).toThrow(LockConfigError);
    }
  });
});

describe('describeKey', () => {
  it('never throws and never runs the value, whatever it is', () => {
    const hostile: unknown[] = [Object.create(null), throwingKey, revokedProxy, Symbol('k'), () => 1, 10n, [1]];
    const getter = Object.defineProperty({}, 'length', {
      get() {
        throw new Error('no getter either');
      },
    });
    for (const value of [...hostile, getter, undefined, null]) {
      expect(() => describeKey(value)).not.toThrow();
    }
    expect(describeKey(Object.create(null))).toBe('object');
    expect(describeKey(revokedProxy)).toBe('object');
    expect(describeKey([1])).toBe('an array');
    expect(describeKey(undefined)).toBe('undefined');
  });

  it('quotes and escapes a key, and cuts a long one to 200 characters with its length', () => {
    expect(describeKey('order:42')).toBe('"order:42"');
    expect(describeKey('a\nb"c')).toBe('"a\\nb\\"c"');
    const huge = describeKey('k'.repeat(2 ** 20));
    expect(huge).toBe(`"${'k'.repeat(200)}…" (1048576 characters)`);
  });

  it('never cuts a surrogate pair in half', () => {
    const key = `${'k'.repeat(199)}\u{1F600}tail`;
    expect(describeKey(key)).toBe(`"${'k'.repeat(199)}…" (${key.length} characters)`);
  });

  it('describes other values as before, strings cut shorter', () => {
    expect(describeValue('x'.repeat(50))).toBe(`"${'x'.repeat(40)}…" (50 characters)`);
    expect(describeValue(7)).toBe('7');
  });
});

describe('error messages', () => {
  const key = 'k'.repeat(1024);
  it.each([
    ['LockTimeoutError', new LockTimeoutError(key, 10)],
    ['LockLostError', new LockLostError(key, 'it expired')],
    ['LockBackendError', new LockBackendError(key, 'acquire', new Error('down'))],
    ['LockAbortedError', new LockAbortedError(key, undefined)],
    ['LockUpgradeError', new LockUpgradeError(key)],
    ['LockInterruptedError', new LockInterruptedError(key, 'shutting down')],
  ])('%s quotes at most 200 characters of the key, and keeps all of it in .key', (_name, err) => {
    expect(err.message).toContain(`"${'k'.repeat(200)}…" (1024 characters)`);
    expect(err.message.length).toBeLessThan(500);
    expect(err.key).toBe(key);
  });

  it('quote a short key as before', () => {
    expect(new LockTimeoutError('invoice:42', 5).message).toContain('waiting for lock "invoice:42", which');
  });
});
