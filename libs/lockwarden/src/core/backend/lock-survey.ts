import type { LockInfo, SemaphoreInfo } from './lock-info';

/** One term of a leadership as the survey shows it. */
export interface SurveyedTerm {
  instanceId: string;
  fencingToken: number;
  /** When the term began, ms since the epoch by the Redis server's clock. */
  since: number;
  /** True when its leader resigned it; a term that ended by expiry or failover is not marked. */
  resigned: boolean;
}

/** A leadership: its latest term, whether it is still led, and the terms before it. */
export interface LeadershipInfo {
  key: string;
  /** The latest term, or null when none was recorded. */
  latestTerm: SurveyedTerm | null;
  /** True while the latest term's leader holds the leadership's lock. */
  leading: boolean;
  /** The latest terms, newest first (at most 5). */
  recent: SurveyedTerm[];
}

/** One waiter in a mutex's fair queue, as operators may see it: never its owner token. */
export interface QueuedWaiterInfo {
  instanceId: string;
  /** How long it has been queued, by the Redis server's clock. */
  waitedMs: number;
}

/** A held lock (mutex or read/write) with the head of its fair queue. */
export interface SurveyedLock extends LockInfo {
  /** The first queued fair waiters, in arrival order (at most 10). */
  queue: QueuedWaiterInfo[];
}

/**
 * What one look at Redis found: the held locks, semaphores and leaderships under the
 * engine's `keyPrefix`, at most `limit` of each kind, and where to go on.
 */
export interface LockSurvey {
  /** When the look began (this process's clock, ms since the epoch). */
  at: number;
  locks: SurveyedLock[];
  semaphores: SemaphoreInfo[];
  leaderships: LeadershipInfo[];
  /** Keys SCAN looked at, over every master. */
  scanned: number;
  /** Keys the masters hold in all (DBSIZE summed). */
  keys: number;
  /** Where the next page starts; null when this look reached the end of the key space. */
  cursor: string | null;
}

/** How far one survey may go. */
export interface SurveyOptions {
  /** The cursor of a previous survey's page; omit for the first page. */
  cursor?: string;
  /**
   * Stop once this many locks, semaphores or leaderships are found (default 100). A page keeps
   * every name of its last SCAN call, so it may hold up to ~100 more.
   */
  limit?: number;
  /** At most about this many keys walked by SCAN per survey, over every master (default 10 000). */
  scanBudget?: number;
}
