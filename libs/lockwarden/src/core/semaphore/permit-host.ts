import type { LeaseHandle } from '../lease/lease';
import type { SemKeys } from '../backend/lock-keys';
import type { SemaphoreInfo } from '../backend/lock-info';
import type { LockDefaults } from '../options/options';
import type { ResolvedPermitAcquire } from './permit-options';

/**
 * What a Semaphore needs of the engine (the engine's PermitGranter provides it). Declared
 * here, on the semaphore's side, so that the semaphore builds on the engine without
 * importing it: the engine makes semaphores, and no arrow runs back.
 */
export interface PermitHost {
  readonly defaults: LockDefaults;
  /** `req.permits` permits at `keys`, or LockTimeoutError naming `limit` when none came free in time. */
  acquire(req: ResolvedPermitAcquire, keys: SemKeys, limit: number): Promise<LeaseHandle>;
  /** One attempt: the permits, or null when they are not free now. */
  tryAcquire(req: ResolvedPermitAcquire, keys: SemKeys, limit: number): Promise<LeaseHandle | null>;
  /** Runs `fn` holding `handle`, then gives the permits back. */
  runLocked<T>(handle: LeaseHandle, fn: () => T | Promise<T>): Promise<T>;
  /** Stores a new limit; resolves the one before it. */
  setLimit(keys: SemKeys, limit: number): Promise<number>;
  inspect(keys: SemKeys, key: string): Promise<SemaphoreInfo>;
}
