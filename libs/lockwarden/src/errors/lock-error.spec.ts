import { inspect } from 'node:util';
import { LockConfigError } from './lock-config.error';
import { LockError } from './lock.error';
import { LockBackendError } from './lock-backend.error';
import { redisReason } from './redis-reason';

describe('LockError', () => {
  it('prints its key when it is about one', () => {
    const err = new LockError('busy', 'order:1');
    expect(err.key).toBe('order:1');
    expect(inspect(err)).toMatch(/key: 'order:1'/);
  });

  it('prints no key when it is about options, not a key (Nest prints a bootstrap error this way)', () => {
    const err = new LockConfigError('waitMs must be a number');
    expect(err.key).toBeUndefined();
    expect(Object.keys(err)).not.toContain('key');
    expect(inspect(err)).not.toMatch(/key:/);
  });
});

describe('redisReason', () => {
  it("names node-redis's TimeoutError, which has no message, instead of saying nothing", () => {
    const err = new Error('');
    err.name = 'TimeoutError';
    expect(redisReason(err)).toBe('the Redis client timed out the call');
    expect(new LockBackendError('k', 'acquire', err).message).toMatch(/the Redis client timed out the call/);
  });
});
