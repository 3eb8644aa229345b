import type { LockInfo } from '../backend/lock-info';
import type { LockLogger } from '../observe/logger';
import type { LeaderTerm, TermLog } from './term-log';
import { redisReason } from '../../errors/redis-reason';
import { tellRefusal } from '../../errors/refusal-notice';

/**
 * One change of leader, as `Leadership.changes()` yields it: a term began, or the term
 * last yielded ended (its leader resigned, or its lease ran out: a crash, a lost lock).
 *
 * @example
 * ```ts
 * for await (const change of locks.leadership('sweeper').changes()) {
 *   if (change.type === 'elected') console.log(`${change.term.instanceId} leads (token ${change.term.fencingToken})`);
 *   else console.log(`term ${change.term.fencingToken} ended: ${change.reason}`);
 * }
 * ```
 */
export type LeaderChange =
  | { readonly type: 'elected'; readonly term: LeaderTerm }
  | { readonly type: 'ended'; readonly term: LeaderTerm; readonly reason: 'resigned' | 'expired' };

/** What watching a leadership needs. */
export interface WatchContext {
  readonly log: TermLog;
  /** The lock the terms are leases of, as inspect() sees it now. */
  inspect(): Promise<LockInfo>;
  /** How long to wait with no leader and no message before looking again (a lost message). */
  readonly idleRecheckMs: number;
  readonly logger: LockLogger;
  /** Aborts when the registry closes. */
  readonly closed: AbortSignal;
}

const BATCH = 100;
const MAX_BACKOFF_MS = 2_000;

/**
 * Yields the current leader's term (if there is one), then every later change, in
 * fencing-token order, each term's election once and its end at most once. Terms come
 * from the term log, so none is skipped however fast they follow each other; the end of a
 * term nobody announced (its leader crashed) is found by looking at the lock when its
 * lease would run out. Redis failures are retried, never thrown: an observer waits them out.
 */
export async function* watchLeader(ctx: WatchContext, signal: AbortSignal | undefined): AsyncGenerator<LeaderChange> {
  const stop = anySignal(ctx.closed, signal);
  const wakeup = new Wakeup(stop);
  let unlisten: (() => void) | undefined;
  try {
    let cursor: string | undefined;
    let last: LeaderTerm | undefined;
    let ended = true;
    let failures = 0;
    while (!stop.aborted) {
      try {
        unlisten ??= await ctx.log.listen(() => wakeup.wake());
        if (cursor === undefined) {
          // Start from the present: the current term (if it still runs), then what follows.
          const [lastId, current, info] = await Promise.all([ctx.log.lastId(), ctx.log.current(), ctx.inspect()]);
          cursor = lastId;
          if (current && !current.resigned && lastId.startsWith(`${current.term.fencingToken}-`)) {
            if (info.held && info.fencingToken === current.term.fencingToken) {
              last = current.term;
              ended = false;
              yield { type: 'elected', term: last };
            }
          }
        }
        const entries = await ctx.log.after(cursor, BATCH);
        for (const entry of entries) {
          cursor = entry.id;
          if (entry.type === 'elected') {
            if (last && !ended) yield { type: 'ended', term: last, reason: 'expired' };
            last = entry.term;
            ended = false;
            yield { type: 'elected', term: last };
          } else if (last && !ended && entry.fencingToken === last.fencingToken) {
            ended = true;
            yield { type: 'ended', term: last, reason: 'resigned' };
          }
        }
        if (entries.length === BATCH) continue;
        let waitMs = ctx.idleRecheckMs;
        if (last && !ended) {
          const info = await ctx.inspect();
          if (!info.held || info.fencingToken !== last.fencingToken) {
            // The lease is gone: yet a resignation or a newer term may have landed meanwhile.
            if ((await ctx.log.after(cursor, 1)).length > 0) continue;
            ended = true;
            yield { type: 'ended', term: last, reason: 'expired' };
            continue;
          }
          // A crashed leader announces nothing: look again when its lease would end.
          waitMs = info.leaseLeftMs + 1;
        }
        failures = 0;
        await wakeup.wait(waitMs);
      } catch (err) {
        failures++;
        // A refusal (an ACL, say) would fail every retry: it is said once, at WARN, not only at debug.
        tellRefusal(ctx.logger, err);
        ctx.logger.debug(`Watching a leadership failed (retrying): ${redisReason(err)}`);
        await wakeup.wait(Math.min(MAX_BACKOFF_MS, 50 * 2 ** failures));
      }
    }
  } finally {
    unlisten?.();
    wakeup.dispose();
  }
}

/** A wait that ends early on a wake-up (one that came while not waiting is kept) or on `stop`. */
class Wakeup {
  private pending = false;
  private resolve: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly onStop = (): void => this.wake();

  constructor(private readonly stop: AbortSignal) {
    stop.addEventListener('abort', this.onStop);
  }

  wake(): void {
    if (this.resolve) this.settle();
    else this.pending = true;
  }

  wait(ms: number): Promise<void> {
    if (this.pending || this.stop.aborted) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.resolve = resolve;
      this.timer = setTimeout(() => this.settle(), Math.min(Math.max(1, Math.ceil(ms)), 2 ** 31 - 1));
    });
  }

  dispose(): void {
    this.stop.removeEventListener('abort', this.onStop);
    this.settle();
  }

  private settle(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const resolve = this.resolve;
    this.resolve = undefined;
    this.pending = false;
    resolve?.();
  }
}

function anySignal(a: AbortSignal, b: AbortSignal | undefined): AbortSignal {
  return b ? AbortSignal.any([a, b]) : a;
}
