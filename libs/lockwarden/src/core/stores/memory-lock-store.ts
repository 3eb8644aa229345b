import { semaphoreInfo } from '../backend/lock-info';
import type { LockInfo, SemaphoreInfo, ServerProbe } from '../backend/lock-info';
import type { MutexKeys, RwKeys, SemKeys } from '../backend/lock-keys';
import type {
  HeldRelease,
  LockStore,
  RenewItem,
  StoreAcquire,
  StoreRwAcquire,
  StoreSemAcquire,
} from '../backend/lock-store';
import type { MemoryState } from '../memory/memory-state';
import { renewMemory } from '../memory/memory-renew';
import { acquireMemory, mintMemory, releaseMemory } from '../mutex/memory-mutex';
import { forceUnlockMemory, inspectMemory } from '../mutex/memory-inspect';
import { rwAcquireMemory, rwReleaseMemory } from '../rwlock/memory-rw';
import { semAcquireMemory, semInspectMemory, semLimitMemory, semReleaseMemory } from '../semaphore/memory-sem';

/**
 * One engine's view of a memory backend: the LockStore interface, answered asynchronously like
 * Redis, by each feature's in-memory part (what its scripts do, on the backend's data).
 */
export class MemoryLockStore implements LockStore {
  readonly fairQueue = true;
  readonly attemptMs = 0;
  readonly readWrite = true;
  readonly rwQueue = false;
  readonly semaphores = true;

  constructor(
    readonly backend: MemoryState,
    private readonly instanceId: string,
  ) {}

  clockDriftMs(): number {
    return 0;
  }

  async acquire(req: StoreAcquire): Promise<number> {
    return acquireMemory(this.backend, req, this.instanceId);
  }

  async mint(keys: MutexKeys, ownerToken: string): Promise<number> {
    return mintMemory(this.backend, keys, ownerToken);
  }

  async release(keys: MutexKeys, ownerToken: string): Promise<boolean> {
    return releaseMemory(this.backend, keys, ownerToken);
  }

  async releaseHeld({ keys, ownerToken }: HeldRelease): Promise<boolean> {
    return releaseMemory(this.backend, keys, ownerToken);
  }

  async rwAcquire(req: StoreRwAcquire): Promise<number> {
    return rwAcquireMemory(this.backend, req, this.instanceId);
  }

  async rwRelease(keys: RwKeys, ownerToken: string, kind: 'read' | 'write'): Promise<boolean> {
    return rwReleaseMemory(this.backend, keys, ownerToken, kind);
  }

  async semAcquire(req: StoreSemAcquire): Promise<number> {
    return semAcquireMemory(this.backend, req, this.instanceId);
  }

  async semRelease(keys: SemKeys, ownerToken: string): Promise<boolean> {
    return semReleaseMemory(this.backend, keys, ownerToken);
  }

  async semLimit(keys: SemKeys, limit: number): Promise<number> {
    return semLimitMemory(this.backend, keys, limit);
  }

  /** The memory backend wakes every waiter on a release instead (see MemoryLockBackend.semRelease). */
  readonly permitHandOff = false;

  /** A release here wakes a waiter, who takes the lock in the same process at no cost: nothing to hand off. */
  readonly mutexHandOffHere = false;

  handOffMutex(): Promise<number> {
    return Promise.reject(new Error('handOffMutex is not available on the memory backend'));
  }

  semHandOff(): Promise<{ released: boolean; fencingToken: number }> {
    return Promise.reject(new Error('semHandOff is not available on the memory backend'));
  }

  async semInspect(keys: SemKeys, key: string): Promise<SemaphoreInfo> {
    return semaphoreInfo(key, semInspectMemory(this.backend, keys));
  }

  async renew(items: readonly RenewItem[]): Promise<boolean[]> {
    return renewMemory(this.backend, items);
  }

  async inspect(prefix: string, key: string): Promise<LockInfo> {
    return inspectMemory(this.backend, prefix, key);
  }

  async forceUnlock(prefix: string, key: string): Promise<boolean> {
    return forceUnlockMemory(this.backend, prefix, key);
  }

  /** Always reachable: there is no server. */
  async probe(): Promise<ServerProbe> {
    return { reachable: true, pingMs: 0, servers: 0, serversUp: 0, scriptsLoaded: true };
  }
}
