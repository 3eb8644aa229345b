/** What happened to a lock. */
export type LockEventType =
  | 'acquired'
  | 'released'
  | 'waiting'
  | 'timeout'
  | 'skipped'
  | 'extended'
  | 'renewed'
  | 'renewFailed'
  | 'lost'
  | 'unprotected'
  | 'overrun'
  | 'missed';

/**
 * One lock event, for your own logging or tests. `waiting` fires once per
 * acquire that has to wait, after it subscribed and found the lock still busy.
 * `unprotected` fires when locked work (`withLock`, a decorated method, a scheduled tick) ran to its
 * end although its lock was lost meanwhile, or found gone at its release: its effects happened while
 * another holder may have held the lock (its `lost` event came first).
 * Scheduled jobs (`@ScheduledLock`) add `overrun` (a tick skipped because the job's
 * previous run was still going), `missed` (a tick whose run never finished was found) and
 * `skipped` for a tick another instance had; each carries the tick's time.
 *
 * @example
 * ```ts
 * LockModule.forRoot({
 *   redis: 'redis://127.0.0.1:6380',
 *   onEvent: (e) => e.type === 'lost' && logger.error(`lost ${e.key}: ${e.reason}`),
 * });
 * ```
 */
export interface LockEvent {
  readonly type: LockEventType;
  readonly key: string;
  /** The lock's low-cardinality name (`AcquireOptions.name`), where the event has one. */
  readonly name?: string;
  /**
   * The lock's fencing token, once one was minted: an uncontended mutex grant takes none
   * until its holder reads it, so its `acquired` event has none.
   */
  readonly fencingToken?: number;
  /** Why a lock was lost. */
  readonly reason?: string;
  /** How long an acquire waited (acquired, timeout). */
  readonly waitedMs?: number;
  /** How long the lock was held (released, lost). */
  readonly heldMs?: number;
  /** On 'acquired': a release handed the lock off to this waiter from the lock's queue (any kind of lock), or its permits within its process. */
  readonly handedOff?: boolean;
  /** The scheduled tick the event is about (scheduled jobs). */
  readonly tick?: Date;
}

export type LockEventListener = (event: LockEvent) => void;
