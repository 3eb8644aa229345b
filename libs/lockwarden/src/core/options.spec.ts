import { Redis } from 'ioredis';
import { LockConfigError } from '../errors';
import { LockEngine } from './lock-engine';
import type { LockEngineOptions } from './engine-options';

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
    engine = new LockEngine({ redis: client });
  });

  afterAll(async () => {
    await engine.close();
    client.disconnect();
  });

  const calls: [string, () => Promise<unknown>, RegExp][] = [
    ['empty key', () => engine.acquire(''), /must not be empty/],
    ['number key', () => engine.acquire(42 as unknown as string), /must be a string/],
    ['null key', () => engine.tryAcquire(null as unknown as string), /must be a string/],
    ['1025-char key', () => engine.acquire('k'.repeat(1025)), /limit is 1024/],
    ['ttlMs below 10', () => engine.acquire('k', { ttlMs: 9 }), /ttlMs must be an integer from 10 to 2147483647/],
    ['fractional ttlMs', () => engine.acquire('k', { ttlMs: 100.5 }), /ttlMs/],
    ['NaN ttlMs', () => engine.acquire('k', { ttlMs: NaN }), /ttlMs/],
    ['infinite ttlMs', () => engine.acquire('k', { ttlMs: Infinity }), /ttlMs/],
    ['ttlMs over 2^31-1', () => engine.acquire('k', { ttlMs: 2 ** 31 }), /ttlMs/],
    ['string ttlMs', () => engine.acquire('k', { ttlMs: '100' as unknown as number }), /ttlMs.*"100"/],
    ['negative waitMs', () => engine.acquire('k', { waitMs: -1 }), /waitMs must be an integer from 0 to 2147483647/],
    ['fractional waitMs', () => engine.acquire('k', { waitMs: 0.5 }), /waitMs/],
    ['misspelt option', () => engine.acquire('k', { waitMS: 10 } as never), /Unknown acquire option "waitMS"/],
    ['non-signal signal', () => engine.acquire('k', { signal: {} as AbortSignal }), /signal must be an AbortSignal/],
    ['non-boolean fair', () => engine.acquire('k', { fair: 'yes' as unknown as boolean }), /fair must be a boolean/],
    ['options not an object', () => engine.acquire('k', 'fast' as never), /options must be an object/],
    ['withLock without a function', () => engine.withLock('k', 'run' as never), /needs a function/],
    ['tryAcquire with a typo', () => engine.tryAcquire('k', { ttl: 100 } as never), /Unknown acquire option "ttl"/],
  ];

  it.each(calls)('%s is rejected with LockConfigError', async (_name, call, message) => {
    const err = await call().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockConfigError);
    expect((err as Error).message).toMatch(message);
  });

  const settings: [string, Record<string, unknown>, RegExp][] = [
    ['missing redis', {}, /redis option is required/],
    ['non-URL string', { redis: 'localhost:6380' }, /redis:\/\/ or rediss:\/\/ URL/],
    ['leaseMs below 10', { redis: 'redis://127.0.0.1:1', leaseMs: 5 }, /leaseMs must be an integer from 10/],
    ['negative waitMs', { redis: 'redis://127.0.0.1:1', waitMs: -5 }, /waitMs must be an integer from 0/],
    ['misspelt option', { redis: 'redis://127.0.0.1:1', leaseMS: 100 }, /Unknown lock module option "leaseMS"/],
    ['numeric keyPrefix', { redis: 'redis://127.0.0.1:1', keyPrefix: 5 }, /keyPrefix must be a string/],
    ['empty instanceId', { redis: 'redis://127.0.0.1:1', instanceId: '' }, /instanceId must be a non-empty string/],
    ['negative safetyMarginMs', { redis: 'redis://127.0.0.1:1', safetyMarginMs: -1 }, /safetyMarginMs/],
    ['non-function onEvent', { redis: 'redis://127.0.0.1:1', onEvent: 'log' }, /onEvent must be a function/],
  ];

  it.each(settings)('engine setting: %s is rejected with LockConfigError', (_name, options, message) => {
    expect(() => new LockEngine(options as unknown as LockEngineOptions)).toThrow(LockConfigError);
    expect(() => new LockEngine(options as unknown as LockEngineOptions)).toThrow(message);
  });

  it('sent nothing to Redis for any of them', () => {
    expect(client.status).toBe('wait');
  });
});
