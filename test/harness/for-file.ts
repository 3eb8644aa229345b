/**
 * What a spec file starts once, before its tests, and stops after them (a server, a Cluster),
 * read through `value()` inside hooks and tests. `atEnd` closes what hooks opened on it (an
 * app, an engine, a client), last registered first, before it stops: closed after it, they
 * would wait on a server that is gone.
 */
export function startedForFile<T>(
  what: string,
  start: () => Promise<T>,
  stop: (value: T) => Promise<unknown>,
  timeoutMs?: number,
): { value(): T; atEnd(...close: (() => unknown)[]): void } {
  let started: { value: T } | undefined;
  const closers: (() => unknown)[] = [];
  beforeAll(async () => {
    started = { value: await start() };
  }, timeoutMs);
  afterAll(async () => {
    // Every closer runs, and the stop, even after one failed; the first failure is then reported.
    const failures: unknown[] = [];
    for (const close of closers.splice(0).reverse())
      await Promise.resolve()
        .then(close)
        .catch((err: unknown) => failures.push(err));
    if (started) await stop(started.value);
    if (failures.length > 0) throw failures[0];
  });
  return {
    value() {
      if (!started) throw new Error(`the file's ${what} is not started yet: read it inside a hook or a test`);
      return started.value;
    },
    atEnd: (...close) => void closers.push(...close),
  };
}
