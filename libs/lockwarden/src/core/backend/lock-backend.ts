import type { LockLogger } from '../observe/logger';
import type { LockSurvey, SurveyOptions } from './lock-survey';
import type { TermLogs } from './term-log';
import type { WakeBus } from './wake-bus';
import type { LockStore } from './lock-store';
import type { ServerEviction } from './server-eviction';
import type { TickStore } from './tick-store';

/** Redis known to be unreachable from this engine (OpenedBackend.outage). */
export interface ConnectionOutage {
  /** When it was first known, on the `performance.now()` clock. */
  readonly since: number;
  /** Why: the connection error as the client raised it, or one in the library's words where the client says none. */
  readonly error: Error;
  /** What cannot be reached, for messages: "Redis at 10.0.0.5:6379", "2 of the quorum's 3 nodes". */
  readonly server: string;
}

/** What one engine works on once its backend is open. */
export interface OpenedBackend {
  /** The lock operations. */
  readonly store: LockStore;
  /** Scheduled jobs' tick records (with a quorum, on the first node). */
  readonly ticks: TickStore;
  /** How waiters hear of releases and hand-offs. */
  readonly bus: WakeBus;
  /** The Redis client object, whichever client it is (with a quorum, the first node's). None in memory. */
  readonly client: object | undefined;
  /**
   * One bounded look at every lock, semaphore and leadership under `prefix`. A backend
   * without it (the in-memory one) has nothing to scan: the engine gives an empty survey.
   */
  survey?(prefix: string, options: SurveyOptions): Promise<LockSurvey>;
  /**
   * Opens the term logs of one leadership registry. A backend without it (the in-memory
   * one) leaves the registry to keep its terms in this process.
   */
  termLogs?(): TermLogs;
  /**
   * Since when, and why, Redis is known to be unreachable: the connection was refused, closed,
   * or lost after it was once ready and not back yet (with a quorum, too many nodes for a
   * majority). Undefined while it works, while it connects for the first time, or where the
   * client cannot tell. Waiting acquires fail on it (wait/outage-sweep.ts).
   */
  outage?(): ConnectionOutage | undefined;
  /**
   * `pending` until the engine's connection is first ready (or Redis first answered an
   * acquire). Absent where there is nothing to connect (in memory) or each node is timed out
   * by itself (quorum).
   */
  readonly firstConnection?: { pending: boolean };
  /** Which servers may evict lock keys, and when they did. Absent where nothing evicts (in memory). */
  readonly eviction?: ServerEviction;
  /** Closes what the backend opened for this engine (never a client the user gave). */
  close(): Promise<void>;
}

/**
 * Where locks are kept. `LockModule` provides the Redis backend its options describe;
 * `LockTestingModule` provides the in-memory one. The engine sees only this.
 *
 * @example
 * ```ts
 * const engine = new LockEngine({ instanceId: 'test' }, undefined, new MemoryLockBackend());
 * ```
 */
export interface LockBackend {
  /** Opens the store and the wake-up bus for one engine, named `instanceId` beside its locks. */
  open(instanceId: string, logger: LockLogger): OpenedBackend;
}
