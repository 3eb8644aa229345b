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
 * would cost them all.
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
        fail: (err) => (this.inFlight.delete(entry), reject(err)),
      };
      this.inFlight.add(entry);
      this.sweeper ??= setInterval(this.sweep, Math.max(10, this.ms / 8)).unref();
      work.then((value) => (this.inFlight.delete(entry), resolve(value)), entry.fail);
    });
  }

  private readonly sweep = (): void => {
    const now = performance.now();
    for (const entry of this.inFlight) {
      if (entry.due <= now) entry.fail(new Error(`Redis did not answer within ${this.said}`));
    }
    if (this.inFlight.size > 0) return;
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  };
}
