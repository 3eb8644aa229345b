import { lockDecorator } from './lock-method';
import type { LockMethodDecorator } from './lock-method';
import type { KeySpec } from './key-template';
import type { LockedOptions } from './locked-options';

/**
 * Runs the method under a shared read lease of the read/write lock(s) named by
 * `key`: any number of `@ReadLocked` calls run together, never alongside a
 * `@WriteLocked` one. Keys and options work as for `@Locked`.
 *
 * @example
 * ```ts
 * @ReadLocked('catalog:{0}')
 * async product(id: string) { return this.repo.find(id); }
 * ```
 */
export const ReadLocked: (key: KeySpec, options?: LockedOptions) => LockMethodDecorator = lockDecorator(
  'read',
  'ReadLocked',
);
