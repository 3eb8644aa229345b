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
import type { MemoryScripts } from './memory-scripts';

/** One engine's view of a memory backend: the LockStore interface, answered asynchronously like Redis. */
export class MemoryLockStore implements LockStore {
  readonly fairQueue = true;
  readonly attemptMs = 0;
  readonly readWrite = true;
  readonly rwQueue = false;
  readonly semaphores = true;

  constructor(
    readonly backend: MemoryScripts,
    private readonly instanceId: string,
  ) {}

  clockDriftMs(): number {
    return 0;
  }

  async acquire(req: StoreAcquire): Promise<number> {
    return this.backend.acquire(req, this.instanceId);
  }

  async mint(keys: MutexKeys, ownerToken: string): Promise<number> {
    return this.backend.mint(keys, ownerToken);
  }

  async release(keys: MutexKeys, ownerToken: string): Promise<boolean> {
    return this.backend.release(keys, ownerToken);
  }

  async releaseHeld({ keys, ownerToken }: HeldRelease): Promise<boolean> {
    return this.backend.release(keys, ownerToken);
  }

  async rwAcquire(req: StoreRwAcquire): Promise<number> {
    return this.backend.rwAcquire(req, this.instanceId);
  }

  async rwRelease(keys: RwKeys, ownerToken: string, kind: 'read' | 'write'): Promise<boolean> {
    return this.backend.rwRelease(keys, ownerToken, kind);
  }

  async semAcquire(req: StoreSemAcquire): Promise<number> {
    return this.backend.semAcquire(req, this.instanceId);
  }

  async semRelease(keys: SemKeys, ownerToken: string): Promise<boolean> {
    return this.backend.semRelease(keys, ownerToken);
  }

  async semLimit(keys: SemKeys, limit: number): Promise<number> {
    return this.backend.semLimit(keys, limit);
  }

  /** The memory backend wakes every waiter on a release instead (see MemoryLockBackend.semRelease). */
  readonly permitHandOff = false;

  semHandOff(): Promise<{ released: boolean; fencingToken: number }> {
    return Promise.reject(new Error('semHandOff is not available on the memory backend'));
  }

  async semInspect(keys: SemKeys, key: string): Promise<SemaphoreInfo> {
    return semaphoreInfo(key, this.backend.semInspect(keys));
  }

  async renew(items: readonly RenewItem[]): Promise<boolean[]> {
    return this.backend.renew(items);
  }

  async inspect(prefix: string, key: string): Promise<LockInfo> {
    return this.backend.inspect(prefix, key);
  }

  async forceUnlock(prefix: string, key: string): Promise<boolean> {
    return this.backend.forceUnlock(prefix, key);
  }

  /** Always reachable: there is no server. */
  async probe(): Promise<ServerProbe> {
    return { reachable: true, pingMs: 0, servers: 0, serversUp: 0, scriptsLoaded: true };
  }
}
