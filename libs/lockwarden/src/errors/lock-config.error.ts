import { LockError } from './lock.error';

/**
 * A bad key or bad options. Thrown (or rejected) before anything touches
 * Redis, so nothing was locked and nothing ran.
 *
 * @example
 * ```ts
 * await expect(locks.acquire('', {})).rejects.toBeInstanceOf(LockConfigError);
 * ```
 */
export class LockConfigError extends LockError {
  constructor(message: string, key?: string) {
    super(message, key);
  }
}
