import { lockDecorator } from './lock-method';
import type { LockMethodDecorator } from './lock-method';
import type { KeySpec } from './key-template';
import type { LockedOptions } from './locked-options';

/**
 * Runs the method under an exclusive write lease of the read/write lock(s)
 * named by `key`: no reader and no other writer runs meanwhile. Calling it
 * from inside a `@ReadLocked` method on the same key rejects with
 * `LockUpgradeError`. Keys and options work as for `@Locked`.
 *
 * @example
 * ```ts
 * @WriteLocked('catalog:{0.id}')
 * async update(product: Product) { await this.repo.save(product); }
 * ```
 */
export const WriteLocked: (key: KeySpec, options?: LockedOptions) => LockMethodDecorator = lockDecorator(
  'write',
  'WriteLocked',
);
