/** What happened to a lock. */
export type LockEventType =
  'acquired' | 'released' | 'waiting' | 'timeout' | 'skipped' | 'extended' | 'renewed' | 'lost';

/**
 * One lock event, for your own logging or tests. `waiting` fires once per
 * acquire that has to wait, after it subscribed and found the lock still busy.
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
  readonly fencingToken?: number;
  /** Why a lock was lost. */
  readonly reason?: string;
  /** How long an acquire waited (acquired, timeout). */
  readonly waitedMs?: number;
}

export type LockEventListener = (event: LockEvent) => void;

/** Calls the user's listener without ever letting it break a lock operation. */
export function emitter(listener: LockEventListener | undefined): ((event: LockEvent) => void) | undefined {
  if (!listener) return undefined;
  return (event) => {
    try {
      listener(event);
    } catch {
      // a faulty listener must not change the outcome of a lock operation
    }
  };
}
