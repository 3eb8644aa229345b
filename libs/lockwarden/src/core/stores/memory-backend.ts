import type { LockBackend, OpenedBackend } from '../backend/lock-backend';
import { WakeChannels } from '../wake/wake-channels';
import { MemoryLockStore } from './memory-lock-store';
import { MemoryState } from '../memory/memory-state';
import { MemoryTickStore } from '../schedule/memory-tick-store';

/**
 * Redis in process memory, for tests: the data, and each feature's operations of its Lua
 * scripts (acquire, release, rw-acquire, rw-release, sem-acquire, sem-release, sem-limit,
 * renew, inspect, force-unlock), one JavaScript function each, with the same replies. Every
 * engine that shares a backend sees the same locks, as processes sharing a
 * Redis would. Time is this process's monotonic clock.
 *
 * It is a test double. The behaviour suite in the repository runs against
 * it and against real Redis, so that the two cannot drift apart.
 *
 * @example
 * ```ts
 * const backend = new MemoryLockBackend();
 * // Two "instances" of a service that contend for the same locks, with no Redis:
 * const a = await Test.createTestingModule({ imports: [LockTestingModule.forRoot({ backend })], providers: [Jobs] }).compile();
 * const b = await Test.createTestingModule({ imports: [LockTestingModule.forRoot({ backend })], providers: [Jobs] }).compile();
 * ```
 */
export class MemoryLockBackend extends MemoryState implements LockBackend {
  /** The store an engine with this instance id uses. */
  store(instanceId: string): MemoryLockStore {
    return new MemoryLockStore(this, instanceId);
  }

  /** The backend side: one engine's store, and a wake-up bus this backend delivers to. */
  open(instanceId: string): OpenedBackend {
    const bus = new WakeChannels();
    this.attach(bus);
    const lockHolder = (key: string): string | undefined => {
      const held = this.mutexes.get(key);
      return held && held.expiresAt > performance.now() ? held.instance : undefined;
    };
    return {
      store: this.store(instanceId),
      ticks: new MemoryTickStore(this.tickEntries, lockHolder, instanceId),
      bus,
      client: undefined,
      close: async () => {
        await bus.close();
        this.detach(bus);
      },
    };
  }
}
