/** A level a line was logged at. */
export type Level = 'log' | 'warn' | 'debug' | 'error';

/**
 * Every line logged, as a LockLogger and as a Nest LoggerService (`moduleRef.useLogger(lines)`),
 * and a way to wait for some: tests wait on what was said, never on a sleep.
 */
export class Lines {
  readonly all: { level: Level; text: string }[] = [];
  private waiting: { level: Level; match: RegExp; count: number; resolve: () => void }[] = [];

  readonly log = (message: unknown): void => this.add('log', message);
  readonly warn = (message: unknown): void => this.add('warn', message);
  readonly debug = (message: unknown): void => this.add('debug', message);
  readonly error = (message: unknown): void => this.add('error', message);
  readonly verbose = (): void => undefined;

  /** The lines of `level` matching `match`, in order. */
  of(level: Level, match: RegExp = /./): string[] {
    return this.all.filter((l) => l.level === level && match.test(l.text)).map((l) => l.text);
  }

  /** Resolves once `count` lines of `level` matching `match` have been logged in all. */
  until(level: Level, match: RegExp, count = 1): Promise<void> {
    if (this.of(level, match).length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push({ level, match, count, resolve }));
  }

  private add(level: Level, message: unknown): void {
    this.all.push({ level, text: String(message) });
    this.waiting = this.waiting.filter((w) => {
      if (this.of(w.level, w.match).length < w.count) return true;
      w.resolve();
      return false;
    });
  }
}
