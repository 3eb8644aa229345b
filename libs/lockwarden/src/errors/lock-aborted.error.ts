import { quoteKey } from './key-text';
import { LockError } from './lock.error';

/**
 * The caller's `AbortSignal` fired (or the lock service shut down) before the
 * lock was acquired. Nothing is held; `cause` is the signal's reason.
 *
 * @example
 * ```ts
 * const ctrl = new AbortController();
 * setTimeout(() => ctrl.abort(), 100);
 * await locks.acquire('k', { signal: ctrl.signal }).catch((e) => e instanceof LockAbortedError);
 * ```
 */
export class LockAbortedError extends LockError {
  constructor(key: string, cause: unknown) {
    const detail = cause instanceof Error ? cause.message : cause === undefined ? 'aborted' : String(cause);
    super(`Acquiring lock ${quoteKey(key)} was aborted: ${detail}. Nothing is held.`, key, { cause });
  }
}
