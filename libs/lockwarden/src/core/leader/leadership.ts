import {
  LockAbortedError,
  LockBackendError,
  LockConfigError,
  LockError,
  LockInterruptedError,
  LockLostError,
  LockTimeoutError,
} from '../../errors';
import type { LockEngine } from '../engine/lock-engine';
import { describe, MAX_MS } from '../engine/options';
import type { LockHandle } from '../lease/lock-handle';
import { watchLeader } from './leader-changes';
import { checkSignalOptions } from './leadership-options';
import type { CampaignOptions, ChangesOptions, LeadershipListener } from './leadership-options';
import { timeAwareSignal } from '../lease/lease';
import { raceSignal, settlesWithin, sleep, whenAborted } from './term-signals';
import type { LeaderChange, WatchContext } from './leader-changes';
import type { LeaderTerm, TermLog } from './term-log';

/** What a Leadership needs from the registry that made it. */
export interface LeadershipContext {
  readonly engine: LockEngine;
  readonly log: TermLog;
  readonly watch: Omit<WatchContext, 'log' | 'inspect'>;
}

interface Term {
  readonly info: LeaderTerm;
  readonly handle: LockHandle;
  readonly controller: AbortController;
  readonly signal: AbortSignal;
  /** Work run through runIfLeader() during this term. */
  readonly running: Set<Promise<unknown>>;
  /** Set once the term ends: the lease is given back when the term's work is done. */
  ending?: Promise<void>;
}

interface Campaign {
  readonly controller: AbortController;
  readonly done: Promise<void>;
  callers: number;
}

const MAX_BACKOFF_MS = 5_000;

/**
 * Leader election for one name, built on the mutex `leader:<name>`: a term is one
 * acquisition of that lock. The watchdog renews it, its `signal` aborts a safety margin
 * before the lease could run out (so before anyone else can be elected), and its fencing
 * token is the term's. Each term is recorded with its start time (Redis `TIME`) and
 * announced, so any instance can ask who leads (`leader()`) or follow every change
 * (`changes()`) without campaigning.
 *
 * Get one from `LockService.leadership(name)` (or `LeadershipRegistry.leadership(name)`
 * without Nest): there is one per name and engine.
 *
 * @example
 * ```ts
 * const leadership = locks.leadership('invoice-sweeper');
 * await leadership.campaign();
 * while (!leadership.signal.aborted) {
 *   await sweepInvoices({ fencingToken: leadership.currentTerm!.fencingToken, signal: leadership.signal });
 * }
 * await leadership.resign();
 * ```
 */
export class Leadership {
  /** The lock key the terms are held under: `leader:<name>`. */
  readonly key: string;
  private term: Term | undefined;
  private campaignRun: Campaign | undefined;
  private resigned = false;
  private notLeading: AbortSignal | undefined;
  private readonly listeners = new Set<LeadershipListener>();

  /** Use `LockService.leadership(name)` or `LeadershipRegistry.leadership(name)`. */
  constructor(
    readonly name: string,
    private readonly ctx: LeadershipContext,
  ) {
    this.key = `leader:${name}`;
  }

  /**
   * Waits, as long as it takes, until this instance leads; resolves at once when it already
   * does. Rejects with `LockAbortedError` when `opts.signal` fires, `resign()` is called or
   * the application shuts down first, and with `LockBackendError` when Redis fails. Calls
   * made while a campaign waits join it: there is one candidate per name and process.
   *
   * @example
   * ```ts
   * await locks.leadership('reports').campaign({ signal: shutdown.signal });
   * ```
   */
  async campaign(opts?: CampaignOptions): Promise<void> {
    const signal = checkSignalOptions('campaign()', opts, this.key);
    this.resigned = false;
    if (this.isLeader()) return;
    if (signal?.aborted) throw new LockAbortedError(this.key, signal.reason);
    const run = (this.campaignRun ??= this.startCampaign());
    run.callers++;
    try {
      await raceSignal(run.done, signal, this.key);
    } finally {
      run.callers--;
      // The last caller to give up stops the shared attempt, so nothing is left waiting.
      if (run.callers === 0 && this.campaignRun === run) {
        this.campaignRun = undefined;
        run.controller.abort(new Error('every caller of campaign() gave up'));
      }
    }
  }

  /**
   * Stands for election until `opts.signal` fires or `resign()` is called: campaigns, and
   * campaigns again whenever leadership is lost. Redis failures are logged and retried.
   * Resolves when it stops; never rejects. This is what `LockModule` runs for every
   * `@LeaderOnly` and `@OnLeadership` name.
   *
   * @example
   * ```ts
   * const stop = new AbortController();
   * void leadership.contend({ signal: stop.signal });
   * // later: stop.abort(); await leadership.resign();
   * ```
   */
  async contend(opts?: CampaignOptions): Promise<void> {
    const signal = checkSignalOptions('contend()', opts, this.key);
    let failures = 0;
    this.resigned = false;
    while (!signal?.aborted && !this.resigned && !this.ctx.engine.shuttingDown) {
      try {
        await this.campaign({ signal });
        failures = 0;
        const term = this.term;
        if (term) await whenAborted(term.signal);
      } catch (err) {
        if (signal?.aborted || this.resigned || this.ctx.engine.shuttingDown) break;
        failures++;
        // The first failure in a row is news; its retries through an outage are not (the
        // connection's own warning already says Redis cannot be reached).
        this.ctx.watch.logger[failures === 1 ? 'warn' : 'debug'](
          `Campaign for ${this.key} failed, retrying: ${err instanceof Error ? err.message : String(err)}`,
        );
        await sleep(Math.min(MAX_BACKOFF_MS, 100 * 2 ** failures), signal);
      }
    }
  }

  /**
   * True while this instance leads: its term is recorded and its lease neither lost nor
   * overdue (checked against the lease's deadline at the moment of the call).
   *
   * @example
   * ```ts
   * if (leadership.isLeader()) await publishDailyDigest();
   * ```
   */
  isLeader(): boolean {
    const term = this.term;
    if (!term) return false;
    // isHeld() reads the lease's deadline: a lease found overdue ends the term right here.
    if (!term.handle.isHeld() && this.term === term) {
      // Normally the lease's signal has ended the term already; not if an interruption aborted it first.
      void this.endTerm(term, term.handle.lostError ?? new LockLostError(this.key, 'its lease is no longer held'));
    }
    return this.term === term && !term.signal.aborted;
  }

  /**
   * The current term while this instance leads (its fencing token and start), else undefined.
   *
   * @example
   * ```ts
   * await store.write(row, { fencingToken: leadership.currentTerm?.fencingToken });
   * ```
   */
  get currentTerm(): LeaderTerm | undefined {
    return this.isLeader() ? this.term?.info : undefined;
  }

  /**
   * Aborts when this instance's leadership ends: with `LockLostError` when its lease was
   * lost (a safety margin before it could run out, so before anyone else can be elected),
   * with `LockInterruptedError` when it resigned or the application is shutting down.
   * While this instance does not lead, it is an aborted signal. Like a lock handle's, its
   * `aborted` checks the lease's deadline when read.
   *
   * @example
   * ```ts
   * await leadership.campaign();
   * await runLeaderLoop({ signal: leadership.signal });
   * ```
   */
  get signal(): AbortSignal {
    if (this.isLeader()) return this.term!.signal;
    this.notLeading ??= AbortSignal.abort(new LockLostError(this.key, 'this instance does not lead it'));
    return this.notLeading;
  }

  /**
   * Gives up leadership, or stops waiting for it. The signal aborts at once and new
   * `runIfLeader()` calls no longer run; once the work already running has finished (up
   * to the engine's `shutdownGraceMs`), the term is recorded as resigned and the lock
   * released, so the next candidate is elected at once instead of after a lease. Work still
   * running after the grace keeps the lock until it ends. Idempotent.
   *
   * @example
   * ```ts
   * process.once('SIGTERM', () => void leadership.resign());
   * ```
   */
  async resign(): Promise<void> {
    this.resigned = true;
    const run = this.campaignRun;
    if (run) {
      this.campaignRun = undefined;
      run.controller.abort(new Error(`${this.key} was resigned`));
      // Resolve only once the abandoned attempt has withdrawn, so nothing of it is left waiting.
      await run.done.catch(() => undefined);
    }
    const term = this.term;
    if (!term) return;
    await this.endTerm(term, new LockInterruptedError(this.key, 'this instance resigned the leadership'));
  }

  /**
   * Who leads now, as Redis records it: the current term (instance id, fencing token and
   * start by Redis time), or null while nobody leads (no term, the last one resigned or its
   * lease gone, or a new leader elected but not yet recorded).
   *
   * @example
   * ```ts
   * const term = await locks.leadership('reports').leader();
   * res.json(term ?? { leader: null });
   * ```
   */
  async leader(): Promise<LeaderTerm | null> {
    try {
      const [info, recorded] = await Promise.all([this.ctx.engine.inspect(this.key), this.ctx.log.current()]);
      if (!info.held || !recorded || recorded.resigned) return null;
      return recorded.term.fencingToken === info.fencingToken ? recorded.term : null;
    } catch (err) {
      throw err instanceof LockError ? err : new LockBackendError(this.key, 'read the leader of', err);
    }
  }

  /**
   * Every change of leader, from any instance, whether or not this one campaigns (like
   * etcd's Observe): first the current term if someone leads, then each later term's
   * election and end, in fencing-token order, never the same one twice. A leader that
   * resigned is announced at once; one that crashed, when its lease runs out. Redis
   * failures are waited out. Ends when `opts.signal` fires or the registry closes.
   *
   * @example
   * ```ts
   * for await (const change of locks.leadership('reports').changes()) {
   *   if (change.type === 'elected') metrics.leader.set(change.term.instanceId);
   * }
   * ```
   */
  changes(opts?: ChangesOptions): AsyncIterable<LeaderChange> {
    const signal = checkSignalOptions('changes()', opts, this.key);
    const ctx: WatchContext = {
      ...this.ctx.watch,
      log: this.ctx.log,
      inspect: () => this.ctx.engine.inspect(this.key),
    };
    return { [Symbol.asyncIterator]: () => watchLeader(ctx, signal) };
  }

  /**
   * Runs `fn` only while this instance leads, and resolves undefined without running it
   * otherwise. `resign()` waits for such work to finish before the lock is released, so
   * two leaders' work never overlaps on a graceful hand-over. What `@LeaderOnly` calls.
   *
   * @example
   * ```ts
   * setInterval(() => void leadership.runIfLeader(() => compactLedger()), 60_000).unref();
   * ```
   */
  async runIfLeader<T>(fn: () => T | Promise<T>): Promise<T | undefined> {
    if (typeof fn !== 'function')
      throw new LockConfigError(`runIfLeader needs a function, got ${describe(fn)}.`, this.key);
    if (!this.isLeader()) return undefined;
    const term = this.term!;
    const run = (async () => fn())();
    const tracked = run.catch(() => undefined);
    term.running.add(tracked);
    void tracked.then(() => term.running.delete(tracked));
    return run;
  }

  /**
   * Calls `listener` when this instance gains or loses this leadership (loss, resignation,
   * shutdown). Errors it throws are logged. Returns the unsubscribe function.
   *
   * @example
   * ```ts
   * const off = leadership.onChange((event, term) => log(`${event} term ${term.fencingToken}`));
   * ```
   */
  onChange(listener: LeadershipListener): () => void {
    if (typeof listener !== 'function') {
      throw new LockConfigError(`onChange needs a function, got ${describe(listener)}.`, this.key);
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // ---- terms ---------------------------------------------------------------------------------

  private startCampaign(): Campaign {
    const controller = new AbortController();
    const run: Campaign = { controller, callers: 0, done: Promise.resolve() };
    const done = this.elect(controller.signal).finally(() => {
      if (this.campaignRun === run) this.campaignRun = undefined;
    });
    // Callers see the outcome through raceSignal; the shared promise itself must never go unhandled.
    done.catch(() => undefined);
    return Object.assign(run, { done });
  }

  private async elect(signal: AbortSignal): Promise<void> {
    for (;;) {
      let handle: LockHandle;
      try {
        handle = await this.ctx.engine.acquire(this.key, { waitMs: MAX_MS, signal });
      } catch (err) {
        if (err instanceof LockTimeoutError) continue;
        throw err;
      }
      let info: LeaderTerm | null;
      try {
        info = await this.ctx.log.elect(this.ctx.engine.options.instanceId, handle.fencingToken);
      } catch (err) {
        await handle.release().catch(() => false);
        throw err instanceof LockError ? err : new LockBackendError(this.key, 'record the term of', err);
      }
      if (signal.aborted) {
        if (info) await this.ctx.log.resign(info.fencingToken).catch(() => false);
        await handle.release().catch(() => false);
        throw new LockAbortedError(this.key, signal.reason);
      }
      if (info && handle.isHeld()) {
        this.beginTerm(handle, info);
        return;
      }
      // A newer term was recorded, or the lease is already gone: this one never led.
      await handle.release().catch(() => false);
    }
  }

  private beginTerm(handle: LockHandle, info: LeaderTerm): void {
    const controller = new AbortController();
    const term: Term = {
      info,
      handle,
      controller, // A term's signal reads the lease's deadline first, as a lock handle's does: a leader
      // that resumes from a pause sees its leadership gone before it acts.
      signal: timeAwareSignal(controller.signal, () => handle.isHeld()),
      running: new Set(),
    };
    this.term = term;
    handle.signal.addEventListener(
      'abort',
      () => {
        const reason: unknown = handle.signal.reason;
        if (reason instanceof LockLostError) void this.endTerm(term, reason);
        // An interruption (a request's client going away) is not the leadership's business,
        // unless it is the application shutting down: then hand over at once.
        else if (this.ctx.engine.shuttingDown) void this.resign();
      },
      { once: true },
    );
    this.notify('gained', info);
  }

  /** Ends a term once: abort its signal, tell listeners, then give the lease back after its work. */
  private endTerm(term: Term, reason: LockError): Promise<void> {
    if (term.ending) return term.ending;
    if (this.term === term) this.term = undefined;
    term.controller.abort(reason);
    this.notify('lost', term.info);
    term.ending = this.handOver(term, reason instanceof LockInterruptedError);
    return term.ending;
  }

  private async handOver(term: Term, resigned: boolean): Promise<void> {
    const work = Promise.all(term.running);
    const grace = this.ctx.engine.options.shutdownGraceMs;
    const finished = term.running.size === 0 || (await settlesWithin(work, grace));
    const giveBack = async (): Promise<void> => {
      // Recorded before the release, so observers see the resignation before the next election.
      if (resigned) {
        await this.ctx.log.resign(term.info.fencingToken).catch((err: unknown) => {
          this.ctx.watch.logger.debug(`Could not record the resignation of ${this.key}: ${String(err)}`);
        });
      }
      await term.handle.release().catch(() => false);
    };
    if (finished) return giveBack();
    this.ctx.watch.logger.warn(
      `Leadership ${this.key} ended, but work started under it still runs after ${grace} ms: ` +
        'its lock is kept until that work ends, so no other instance runs beside it.',
    );
    void work.then(giveBack).catch(() => undefined);
  }

  private notify(event: 'gained' | 'lost', term: LeaderTerm): void {
    for (const listener of this.listeners) {
      try {
        const result = listener(event, term);
        if (result && typeof (result as Promise<void>).then === 'function') {
          (result as Promise<void>).catch((err: unknown) => this.listenerFailed(event, err));
        }
      } catch (err) {
        this.listenerFailed(event, err);
      }
    }
  }

  private listenerFailed(event: string, err: unknown): void {
    this.ctx.watch.logger.warn(
      `A "${event}" listener of ${this.key} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
    );
  }
}
