import { LockBackendError, LockError, LockLostError } from '../../errors';
import type { LeadershipHost } from './leadership-host';
import { checkFunction } from '../options/validate';
import { Campaign } from './campaign';
import { watchLeader } from './leader-changes';
import { LeadershipListeners } from './leadership-listeners';
import { checkSignalOptions } from './leadership-options';
import type { CampaignOptions, ChangesOptions, LeadershipListener } from './leadership-options';
import type { LeaderChange, WatchContext } from './leader-changes';
import { TermKeeper } from './term-keeper';
import type { LeaderTerm, TermLog } from './term-log';

/** What a Leadership needs from the registry that made it. */
export interface LeadershipContext {
  readonly engine: LeadershipHost;
  readonly log: TermLog;
  readonly watch: Omit<WatchContext, 'log' | 'inspect'>;
}

// The public face of a leadership: it checks what callers pass and answers who leads. What
// it delegates lives beside it, one part per file: campaigning (campaign.ts), the term this
// instance holds (term-keeper.ts) and the onChange() listeners (leadership-listeners.ts).

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
  private notLeading: AbortSignal | undefined;
  private readonly listeners: LeadershipListeners;
  /** This instance's term, while it holds one. */
  private readonly terms: TermKeeper;
  private readonly campaigning: Campaign;

  /** Use `LockService.leadership(name)` or `LeadershipRegistry.leadership(name)`. */
  constructor(
    readonly name: string,
    private readonly ctx: LeadershipContext,
  ) {
    this.key = `leader:${name}`;
    const { engine, log } = ctx;
    const { logger } = ctx.watch;
    this.listeners = new LeadershipListeners(this.key, logger);
    this.terms = new TermKeeper({
      key: this.key,
      engine,
      log,
      logger,
      listeners: this.listeners,
      resign: () => void this.resign(),
    });
    this.campaigning = new Campaign({
      key: this.key,
      engine,
      log,
      logger,
      isLeader: () => this.isLeader(),
      termSignal: () => this.terms.current?.signal,
      begin: (handle, term) => this.terms.begin(handle, term),
    });
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
    return this.campaigning.campaign(signal);
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
    return this.campaigning.contend(signal);
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
    return this.terms.leading() !== undefined;
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
    return this.terms.leading()?.term;
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
    const own = this.terms.leading();
    if (own) return own.signal;
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
    // Awaited only when there is something to wait for: with no campaign waiting, the
    // signal aborts before resign() returns.
    const withdrawn = this.campaigning.withdraw();
    if (withdrawn) await withdrawn;
    const ended = this.terms.resign();
    if (ended) await ended;
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
   * two leaders' work never overlaps on a graceful hand-off. What `@LeaderOnly` calls.
   *
   * @example
   * ```ts
   * setInterval(() => void leadership.runIfLeader(() => compactLedger()), 60_000).unref();
   * ```
   */
  async runIfLeader<T>(fn: () => T | Promise<T>): Promise<T | undefined> {
    checkFunction('runIfLeader', fn, '', this.key);
    return this.terms.run(fn);
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
    checkFunction('onChange', listener, '', this.key);
    return this.listeners.add(listener);
  }
}
