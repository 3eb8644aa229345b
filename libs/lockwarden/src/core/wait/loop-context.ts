import type { LockEvent } from '../observe/events';
import type { LockLogger } from '../observe/logger';
import type { LockStore } from '../backend/lock-store';
import type { WakeBus } from '../backend/wake-bus';
import type { OutageSweep } from './outage-sweep';

// What the wait loop (acquireLoop) is given by its engine, and what it gives back.

/** What shutdown may cut short: a waiting acquire (AcquireGate). */
export interface Abortable {
  abort(reason: unknown): void;
}

export interface LoopContext {
  readonly store: LockStore;
  readonly bus: WakeBus;
  /** The acquires waiting now: shutdown aborts them. */
  readonly gates: Set<Abortable>;
  /** Aborted, with the reason, once the engine shuts down. */
  readonly stopping: AbortSignal;
  readonly commandTimeoutMs: number;
  /** SETTLE_GRACE_MS plus what an attempt may take by design (see the settle rule in acquire-loop.ts). */
  readonly settleGraceMs: number;
  readonly emit: ((event: LockEvent) => void) | undefined;
  readonly logger: LockLogger;
  /** What Redis known to be unreachable fails, and when: the engine's one OutageSweep. */
  readonly outages: OutageSweep;
  /** `pending` until the engine's connection is first ready, or Redis first answered an attempt. */
  readonly firstConnection?: { pending: boolean };
}

export type LoopResult =
  | {
      readonly granted: true;
      readonly fencingToken: number;
      readonly leaseFrom: number;
      /** How many releases handed the permits off in a row to get here (sem-release.lua). */
      readonly handOffs?: number;
      /** Mutexes: since when the lock has been handed off from holder to holder within this process (mutex-lease.ts). */
      readonly handOffsSince?: number;
      /** A release handed the lock (fair queue) or its permits off to this waiter. */
      readonly handedOff?: boolean;
      /**
       * A hand-off used as told, shorter than the lease asked for: the server holds it this
       * long from `leaseFrom` at least, and the watchdog must extend it at once.
       */
      readonly grantedMs?: number;
      /**
       * It waited, or was handed the lock: others likely wait for it too, so its release goes
       * straight to the script that hands it off, without first trying the one-key release.
       */
      readonly contended?: boolean;
    }
  | { readonly granted: false; readonly busyMs: number };
