import type { AcquireOptions } from '../options/options';
import type { RwAcquireOptions } from '../rwlock/rw-options';

/**
 * What `@Locked`, `@ReadLocked` and `@WriteLocked` ask of each key: the kind of lock and the
 * options of each acquire (with `@Semaphore`'s, a LockSpec). The Nest layer checks the
 * decorators' options where they are applied and hands the engine this.
 *
 * @example
 * ```ts
 * const spec: LockedSpec = { kind: 'read', options: { waitMs: 2_000 } };
 * ```
 */
export type LockedSpec =
  | { readonly kind: 'mutex'; readonly options: AcquireOptions }
  | { readonly kind: 'read' | 'write'; readonly options: RwAcquireOptions };
