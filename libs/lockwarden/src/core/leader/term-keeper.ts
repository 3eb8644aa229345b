import { LockError, LockInterruptedError, LockLostError } from '../../errors';
import type { LeadershipHost } from './leadership-host';
import { timeAwareSignal } from '../lease/lease';
import type { LockHandle } from '../lease/lock-handle';
import type { LockLogger } from '../observe/logger';
import type { LeadershipListeners } from './leadership-listeners';
import type { LeaderTerm, TermLog } from './term-log';
import { settlesWithin } from './term-signals';

/** A term this instance holds: the term as recorded, and the lease, signal and work that go with it. */
export interface OwnTerm {
  readonly term: LeaderTerm;
  readonly handle: LockHandle;
  readonly controller: AbortController;
  readonly signal: AbortSignal;
  /** Work run through runIfLeader() during this term. */
  readonly running: Set<Promise<unknown>>;
  /** Set once the term ends: the lease is released when the term's work is done. */
  ending?: Promise<void>;
}

/** What keeping the terms of one leadership needs. */
export interface TermKeeperContext {
  readonly key: string;
  readonly engine: LeadershipHost;
  readonly log: TermLog;
  readonly logger: LockLogger;
  readonly listeners: LeadershipListeners;
  /** Resigns the leadership: what a term does when the application shuts down under it. */
  resign(): void;
}

/**
 * The term this instance holds of one leadership, from the election that begins it to the
 * hand-off that ends it: its signal, the work run under it, and the order of its end
 * (signal, listeners, then the lease released once that work is done). Kept apart from
 * campaigning, which only begins a term: a term ends on its own when its lease is lost,
 * whoever won it and however.
 */
export class TermKeeper {
  private own: OwnTerm | undefined;

  constructor(private readonly ctx: TermKeeperContext) {}

  /** The term held now, unchecked: it may be overdue by its lease's deadline (see leading()). */
  get current(): OwnTerm | undefined {
    return this.own;
  }

  /** The term held now while it leads: recorded, and its lease neither lost nor overdue. */
  leading(): OwnTerm | undefined {
    const own = this.own;
    if (!own) return undefined;
    // isHeld() reads the lease's deadline: a lease found overdue ends the term right here.
    if (!own.handle.isHeld() && this.own === own) {
      // Normally the lease's signal has ended the term already; not if an interruption aborted it first.
      void this.end(own, own.handle.lostError ?? new LockLostError(this.ctx.key, 'its lease is no longer held'));
    }
    return this.own === own && !own.signal.aborted ? own : undefined;
  }

  begin(handle: LockHandle, term: LeaderTerm): void {
    const controller = new AbortController();
    const own: OwnTerm = {
      term,
      handle,
      controller, // A term's signal reads the lease's deadline first, as a lock handle's does: a leader
      // that resumes from a pause sees its leadership gone before it acts.
      signal: timeAwareSignal(controller.signal, () => handle.isHeld()),
      running: new Set(),
    };
    this.own = own;
    handle.signal.addEventListener(
      'abort',
      () => {
        const reason: unknown = handle.signal.reason;
        if (reason instanceof LockLostError) void this.end(own, reason);
        // An interruption (a request's client going away) is not the leadership's business,
        // unless it is the application shutting down: then hand off at once.
        else if (this.ctx.engine.shuttingDown) this.ctx.resign();
      },
      { once: true },
    );
    this.ctx.listeners.notify('gained', term);
  }

  /** Ends the term held now, if any, as resigned; undefined when there is none. */
  resign(): Promise<void> | undefined {
    const own = this.own;
    if (!own) return undefined;
    return this.end(own, new LockInterruptedError(this.ctx.key, 'this instance resigned the leadership'));
  }

  /** Runs `fn` under the term that leads now, so that its end waits for it; undefined when none leads. */
  run<T>(fn: () => T | Promise<T>): Promise<T> | undefined {
    const own = this.leading();
    if (!own) return undefined;
    const run = (async () => fn())();
    const tracked = run.catch(() => undefined);
    own.running.add(tracked);
    void tracked.then(() => own.running.delete(tracked));
    return run;
  }

  /** Ends a term once: abort its signal, tell listeners, then release the lease after its work. */
  private end(own: OwnTerm, reason: LockError): Promise<void> {
    if (own.ending) return own.ending;
    if (this.own === own) this.own = undefined;
    own.controller.abort(reason);
    this.ctx.listeners.notify('lost', own.term);
    own.ending = this.handOff(own, reason instanceof LockInterruptedError);
    return own.ending;
  }

  private async handOff(own: OwnTerm, resigned: boolean): Promise<void> {
    const { key, engine, log, logger } = this.ctx;
    const work = Promise.all(own.running);
    const grace = engine.options.shutdownGraceMs;
    const finished = own.running.size === 0 || (await settlesWithin(work, grace));
    const release = async (): Promise<void> => {
      // Recorded before the release, so observers see the resignation before the next election.
      if (resigned) {
        await log.resign(own.term.fencingToken).catch((err: unknown) => {
          logger.debug(`Could not record the resignation of ${key}: ${String(err)}`);
        });
      }
      await own.handle.release().catch(() => false);
    };
    if (finished) return release();
    logger.warn(
      `Leadership ${key} ended, but work started under it still runs after ${grace} ms: ` +
        'its lock is kept until that work ends, so no other instance runs beside it.',
    );
    void work.then(release).catch(() => undefined);
  }
}
