import { inspect } from 'node:util';
import { LockConfigError } from './lock-config.error';
import { LockError } from './lock.error';
import { LockBackendError } from './lock-backend.error';
import { RedisCallDroppedError, redisAdvice, redisReason, refusalOf } from './redis-reason';

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

describe('redisReason, for a call dropped while the connection was down', () => {
  const dropped = Object.assign(new Error('Reached the max retries per request limit (which is 2).'), {
    name: 'MaxRetriesPerRequestError',
  });

  it('names the certificate a TLS connection failed on, with the option that fixes it', () => {
    const tls = Object.assign(new Error('self-signed certificate in certificate chain'), {
      code: 'SELF_SIGNED_CERT_IN_CHAIN',
    });
    const message = new LockBackendError('k', 'acquire', new RedisCallDroppedError(dropped, tls)).message;
    expect(message).toContain('the TLS connection to Redis failed: self-signed certificate in certificate chain');
    expect(message).toContain('tls.ca');
    expect(message).toContain('the call was dropped while reconnecting');
    expect(message).not.toContain('Check that Redis is reachable');
  });

  it("says only that the connection is down when nothing said why (ioredis's own words kept out)", () => {
    expect(redisReason(dropped)).toBe('the connection to Redis is down; the call was dropped while reconnecting');
  });

  it('tells LOADING (a server still reading its data) as a passing answer, not a refusal', () => {
    // Lockwarden's own ioredis clients skip the client's ready check (which waited for loading
    // to end): a call that meets LOADING fails as a backend error that a retry may get past.
    const loading = Object.assign(new Error('LOADING Redis is loading the dataset in memory'), { name: 'ReplyError' });
    expect(refusalOf(loading)).toBeUndefined();
    expect(redisAdvice(loading)).toMatch(/Check that Redis is reachable/);
  });
});
