import type { TermKeys } from './lock-keys';

/**
 * One term of a leadership: who led, with which fencing token, since when (Redis server
 * time, never a client clock).
 *
 * @example
 * ```ts
 * const term = await locks.leadership('billing-sweeper').leader();
 * if (term) console.log(`${term.instanceId} leads since ${term.since.toISOString()} (token ${term.fencingToken})`);
 * ```
 */
export interface LeaderTerm {
  /** The leader's `instanceId` (by default `hostname:pid`). */
  readonly instanceId: string;
  /** The term's fencing token: it rises with every term; hand it to what the leader writes. */
  readonly fencingToken: number;
  /** When the term began, by the Redis server's clock. */
  readonly since: Date;
}

/** One record of the term log, in fencing-token order. */
export type TermEntry =
  | { readonly id: string; readonly type: 'elected'; readonly term: LeaderTerm }
  | { readonly id: string; readonly type: 'resigned'; readonly fencingToken: number };

/** The latest term as recorded, and whether its leader has resigned it since. */
export interface RecordedTerm {
  readonly term: LeaderTerm;
  readonly resigned: boolean;
}

/** Where a leadership's terms are recorded and announced. */
export interface TermLog {
  /** Records a new term; null when a newer one is already recorded (ours is stale). */
  elect(instanceId: string, fencingToken: number): Promise<LeaderTerm | null>;
  /** Records that the term `fencingToken` was resigned; false when it is no longer the latest. */
  resign(fencingToken: number): Promise<boolean>;
  /** The latest recorded term, if any. */
  current(): Promise<RecordedTerm | null>;
  /** Up to `count` entries after `cursor` (an entry id, or '0-0' for the start). */
  after(cursor: string, count: number): Promise<TermEntry[]>;
  /** The id of the last entry, or '0-0'. */
  lastId(): Promise<string>;
  /** Calls `wake` on every announcement (and after a reconnect); resolves, with the unsubscribe, once listening. */
  listen(wake: () => void): Promise<() => void>;
}

/** How many entries a term log keeps: an observer further behind than this misses the oldest. */
export const TERM_LOG_LENGTH = 1000;

/**
 * The term logs of one leadership registry. Those on Redis share one subscriber
 * connection of their own, made on first use and closed by `close()`.
 */
export interface TermLogs {
  /** The log of the leadership whose keys are `keys`. */
  log(keys: TermKeys): TermLog;
  /** Stops hearing announcements (closes the subscriber connection, if one was made). */
  close(): Promise<void>;
}
