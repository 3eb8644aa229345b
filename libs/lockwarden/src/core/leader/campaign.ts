import { LockAbortedError, LockBackendError, LockError, LockLostError, LockTimeoutError } from '../../errors';
import type { LeadershipHost } from './leadership-host';
import { MAX_MS } from '../options/options';
import type { LockHandle } from '../lease/lock-handle';
import type { LockLogger } from '../observe/logger';
import type { LeaderTerm, TermLog } from './term-log';
import { raceSignal, sleep, whenAborted } from './term-signals';

/** One attempt to be elected, shared by every campaign() call made while it waits. */
interface Attempt {
  readonly controller: AbortController;
  readonly done: Promise<void>;
  callers: number;
}

/** What campaigning for one leadership needs. */
export interface CampaignContext {
  readonly key: string;
  readonly engine: LeadershipHost;
  readonly log: TermLog;
  readonly logger: LockLogger;
  /** True while this instance leads. */
  isLeader(): boolean;
  /** The signal of the term this instance holds, if it holds one. */
  termSignal(): AbortSignal | undefined;
  /** Begins this instance's term: its lease is held and the term recorded. */
  begin(handle: LockHandle, term: LeaderTerm): void;
}

const MAX_BACKOFF_MS = 5_000;

/**
 * This process's campaign for one leadership: the one attempt to be elected that every
 * `campaign()` call joins, the loop that takes the lock and records the term, and
 * `contend()` standing again after each loss. Kept apart from the term it wins, which is
 * kept and ended the same way however it began.
 */
export class Campaign {
  private attempt: Attempt | undefined;
  private resigned = false;

  constructor(private readonly ctx: CampaignContext) {}

  /** See Leadership.campaign(). */
  async campaign(signal: AbortSignal | undefined): Promise<void> {
    this.resigned = false;
    if (this.ctx.isLeader()) return;
    if (signal?.aborted) throw new LockAbortedError(this.ctx.key, signal.reason);
    const attempt = (this.attempt ??= this.start());
    attempt.callers++;
    try {
      await raceSignal(attempt.done, signal, this.ctx.key);
    } finally {
      attempt.callers--;
      // The last caller to give up stops the shared attempt, so nothing is left waiting.
      if (attempt.callers === 0 && this.attempt === attempt) {
        this.attempt = undefined;
        attempt.controller.abort(new Error('every caller of campaign() gave up'));
      }
    }
  }

  /** See Leadership.contend(). */
  async contend(signal: AbortSignal | undefined): Promise<void> {
    const { key, engine, logger } = this.ctx;
    let failures = 0;
    this.resigned = false;
    while (!signal?.aborted && !this.resigned && !engine.shuttingDown) {
      try {
        await this.campaign(signal);
        failures = 0;
        const termSignal = this.ctx.termSignal();
        if (termSignal) await whenAborted(termSignal);
      } catch (err) {
        if (signal?.aborted || this.resigned || engine.shuttingDown) break;
        failures++;
        // The first failure in a row is news; its retries through an outage are not (the
        // connection's own warning already says Redis cannot be reached).
        logger[failures === 1 ? 'warn' : 'debug'](
          `Campaign for ${key} failed, retrying: ${err instanceof Error ? err.message : String(err)}`,
        );
        await sleep(Math.min(MAX_BACKOFF_MS, 100 * 2 ** failures), signal);
      }
    }
  }

  /**
   * Stops campaigning, for resign(): contend() stops and the waiting attempt, if any, is
   * abandoned. Returns that attempt's end, which comes once nothing of it is left waiting.
   */
  withdraw(): Promise<void> | undefined {
    this.resigned = true;
    const attempt = this.attempt;
    if (!attempt) return undefined;
    this.attempt = undefined;
    attempt.controller.abort(new Error(`${this.ctx.key} was resigned`));
    return attempt.done.catch(() => undefined);
  }

  private start(): Attempt {
    const controller = new AbortController();
    const attempt: Attempt = { controller, callers: 0, done: Promise.resolve() };
    const done = this.elect(controller.signal).finally(() => {
      if (this.attempt === attempt) this.attempt = undefined;
    });
    // Callers see the outcome through raceSignal; the shared promise itself must never go unhandled.
    done.catch(() => undefined);
    return Object.assign(attempt, { done });
  }

  private async elect(signal: AbortSignal): Promise<void> {
    const { key, engine, log } = this.ctx;
    for (;;) {
      let handle: LockHandle;
      try {
        // The term is recorded with the token: minted with the grant, in its one round trip.
        handle = await engine.acquire(key, { waitMs: MAX_MS, signal, fenced: true });
      } catch (err) {
        if (err instanceof LockTimeoutError) continue;
        throw err;
      }
      let term: LeaderTerm | null;
      try {
        term = await log.elect(engine.options.instanceId, await handle.fencingToken());
      } catch (err) {
        await handle.release().catch(() => false);
        // The lease ran out between the grant and reading its token (a stalled process): this
        // one never led, and the holder was told. Campaign on, as for any term that never began.
        if (err instanceof LockLostError) continue;
        throw err instanceof LockError ? err : new LockBackendError(key, 'record the term of', err);
      }
      if (signal.aborted) {
        if (term) await log.resign(term.fencingToken).catch(() => false);
        await handle.release().catch(() => false);
        throw new LockAbortedError(key, signal.reason);
      }
      if (term && handle.isHeld()) {
        this.ctx.begin(handle, term);
        return;
      }
      // A newer term was recorded, or the lease is already gone: this one never led.
      await handle.release().catch(() => false);
    }
  }
}
