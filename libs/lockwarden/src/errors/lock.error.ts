/**
 * Base class of every error Lockwarden throws, so one `instanceof LockError`
 * check separates lock problems from the protected code's own errors.
 *
 * @example
 * ```ts
 * try {
 *   await locks.withLock('report:daily', () => buildReport());
 * } catch (err) {
 *   if (err instanceof LockError) logger.warn(`lock problem on ${err.key}: ${err.message}`);
 *   else throw err;
 * }
 * ```
 */
export class LockError extends Error {
  /** The lock key the error is about, when there is one. */
  declare readonly key: string | undefined;

  constructor(message: string, key?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    // Set only when there is one: an error about options, not a key, is printed without `key: undefined`.
    if (key !== undefined) (this as { key: string }).key = key;
  }
}
