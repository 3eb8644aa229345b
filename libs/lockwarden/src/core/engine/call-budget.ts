import { afterReads } from '../redis/after-reads';

/** One holder's call waiting for Redis: when it is due, and how it fails. */
interface InFlight {
  readonly due: number;
  fail(err: unknown): void;
}

/**
 * Bounds a holder's calls (a release, a token read, an extension) by one budget: a call Redis
 * does not answer within it fails, so a holder awaiting Redis through a partition is told, not
 * kept. One timer sweeps every call in flight, every eighth of the budget, so a call with no
 * answer fails between 1 and 1.125 times it: every release is such a call, and a timer each
 * would cost them all. The timer stops as the last call in flight settles, and a call found due
 * fails only after the event loop has read what arrived meanwhile (afterReads): a stall of this
 * process is not Redis' silence.
 */
export class CallBudget {
  private readonly inFlight = new Set<InFlight>();
  private sweeper: NodeJS.Timeout | undefined;

  /** @param said the budget in words, for the error: "2000 ms (commandTimeoutMs)". */
  constructor(
    private readonly ms: number,
    private readonly said: string,
  ) {}

  /** `work`'s answer or failure, or "Redis did not answer" once the budget is spent. */
  bound<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const entry: InFlight = {
        due: performance.now() + this.ms,
        fail: (err) => (this.settled(entry), reject(err)),
      };
      this.inFlight.add(entry);
      this.sweeper ??= setInterval(this.sweep, Math.max(10, this.ms / 8)).unref();
      work.then((value) => (this.settled(entry), resolve(value)), entry.fail);
    });
  }

  private settled(entry: InFlight): void {
    this.inFlight.delete(entry);
    if (this.inFlight.size > 0) return;
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  private readonly sweep = (): void => {
    const now = performance.now();
    const due = [...this.inFlight].filter((entry) => entry.due <= now);
    if (due.length === 0) return;
    afterReads(() => {
      for (const entry of due) {
        if (this.inFlight.has(entry)) entry.fail(new Error(`Redis did not answer within ${this.said}`));
      }
    })();
  };
}
