import { LockBackendError, LockError } from '../../errors';
import type { AcquireOptions } from '../options/options';
import type { LeaseHandle } from '../lease/lease';
import type { LockEvent } from '../observe/events';
import type { LockLogger } from '../observe/logger';
import type { CheckedScheduledOptions } from './scheduled-options';
import type { TickSchedule } from './tick-schedule';
import type { TickKeys, TickStore } from '../backend/tick-store';

// What a scheduled job needs of the engine, and what the parts of a job (scheduled-job.ts,
// tick-runner.ts, tick-hand-off.ts, tick-notices.ts) share: in a file of its own, so that
// each part depends on this one and none on another's file for it.

/** What a scheduled job needs of the engine. */
export interface JobHost {
  readonly ticks: TickStore;
  readonly keyPrefix: string;
  readonly leaseMs: number;
  readonly logger: LockLogger;
  readonly emit: ((event: LockEvent) => void) | undefined;
  /** Aborts when the engine begins to shut down: no tick is claimed or started after it. */
  readonly stopping: AbortSignal;
  /** What was said once already, per job ("ahead:<key>", "overrun:<key>"), so a WARN is not repeated every tick. */
  readonly noticed: Set<string>;
  /**
   * `call()`'s answer, unless Redis is known unreachable: it then fails at once, or once the
   * outage has lasted `commandTimeoutMs` (LockBackendError). An answer that came after that
   * goes to `late`. Absent where nothing can be unreachable.
   */
  readonly reachable?: <T>(key: string, action: string, call: () => Promise<T>, late: (value: T) => void) => Promise<T>;
  /**
   * Fails a tick before anything of it is written to Redis, where the engine refuses acquires
   * (onEvictingServer: 'refuse' on a server that may evict); absent otherwise.
   */
  readonly admit?: (key: string) => Promise<void> | void;
  tryAcquire(key: string, options: AcquireOptions): Promise<LeaseHandle | null>;
  acquire(key: string, options: AcquireOptions): Promise<LeaseHandle>;
  /** Runs `fn` holding `handle`, then releases it (or keeps it to lockAtLeastMs). */
  runLocked<T>(handle: LeaseHandle, fn: () => Promise<T>): Promise<T>;
  /**
   * Work that shutdown waits for (within its grace) before it closes Redis: a tick's whole
   * handling, so that a tick handed off while shutting down reaches Redis.
   */
  track<T>(work: Promise<T>): Promise<T>;
}

/** One scheduled job, as each of its parts sees it. */
export interface JobScope {
  readonly host: JobHost;
  readonly key: string;
  readonly keys: TickKeys;
  readonly schedule: TickSchedule;
  readonly options: CheckedScheduledOptions;
}

/** A tick store call of `job`, whose failure is a LockBackendError in the library's words. */
export async function askStore<T>(job: JobScope, action: string, call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (err) {
    throw err instanceof LockError ? err : new LockBackendError(job.key, action, err);
  }
}
