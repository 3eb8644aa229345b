import { quoteKey } from './key-text';
import { LockError } from './lock.error';
import { redisAdvice, redisReason } from './redis-reason';

/**
 * Redis was unreachable or failed while handling a lock, or refused what was asked (a command
 * the ACL user may not run, `OOM`: then the message names the command and the ACL rule that
 * allows it, and retrying does not help until that is fixed). The message says why in the
 * library's words ("Redis 10.0.0.5:6379 refused the connection"); `cause` carries the
 * underlying error as the Redis client raised it. Unlike {@link LockTimeoutError} this
 * says nothing about other holders: the state of the lock is unknown.
 *
 * @example
 * ```ts
 * try {
 *   await locks.withLock('sync', run);
 * } catch (err) {
 *   if (err instanceof LockBackendError) metrics.increment('redis_down');
 *   throw err;
 * }
 * ```
 */
export class LockBackendError extends LockError {
  constructor(key: string | undefined, action: string, cause: unknown) {
    const detail = redisReason(cause);
    super(
      `Redis failed while trying to ${action}${key === undefined ? '' : ` lock ${quoteKey(key)}`}: ${detail}. ` +
        redisAdvice(cause),
      key,
      { cause },
    );
  }
}
