import { Injectable } from '@nestjs/common';
import { LockEngine } from '../core';

/**
 * The lease watchdog, as the app sees it. One timer renews every held lock in batched
 * script calls, from each lock's confirmed acquisition, and aborts a lock's signal when
 * renewal has not succeeded by `lease − safetyMarginMs` or `maxHoldMs` is reached. It
 * watches a lock from the moment it is granted; `LockLifecycle` starts and stops it with
 * the application.
 *
 * @example
 * ```ts
 * const watchdog = app.get(LockWatchdog);
 * logger.log(`${watchdog.heldLocks} locks held, last round ran ${watchdog.lagMs} ms late`);
 * ```
 */
@Injectable()
export class LockWatchdog {
  constructor(private readonly engine: LockEngine) {}

  /** How many acquisitions are held (and watched) right now. */
  get heldLocks(): number {
    return this.engine.heldLocks;
  }

  /** How late the watchdog runs: its last round's lateness, or how overdue the next one is (0 while idle), in ms. */
  get lagMs(): number {
    return this.engine.watchdog.lagMs;
  }

  /** Renewal rounds run so far. */
  get rounds(): number {
    return this.engine.watchdog.rounds;
  }
}
