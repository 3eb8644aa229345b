/**
 * Closes what a test opened (apps, engines, clients, servers) once it is over, last opened
 * first, whether it passed or not: a failed test must not leave its locks held into the next.
 * Call it at a spec's top level; push closers onto what it returns.
 */
export function closersForFile(): { push(...close: (() => unknown)[]): void } {
  const closers: (() => unknown)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  return { push: (...close) => void closers.push(...close) };
}
