/**
 * The long checks (history, faults, the behaviour suite) can run in every cell of server ×
 * client × topology. npm test runs the cells that test each behaviour once: one per topology
 * and one per client, the suite's cells. `npm run test:matrix` runs the rest in its
 * "every cell" leg, which sets LOCKWARDEN_TEST_CELLS=rest. A table marks its suite cells, and
 * `cells()` gives the ones this run takes, so no cell runs twice.
 *
 * npm test's cells, where Valkey 9 is built (tools/valkey9.sh):
 * - history check: one Redis through node-redis, a Valkey 9 Cluster through GLIDE, a Redlock
 *   quorum through ioredis (history*.spec.ts);
 * - fault-proxy tests: one Redis through ioredis and node-redis, one Valkey 9 through GLIDE; a
 *   Cluster through ioredis and a Valkey 9 Cluster through GLIDE (faults*.spec.ts);
 * - behaviour suite: one Redis through ioredis and node-redis, a Cluster through ioredis
 *   (behaviour-*.spec.ts); one Valkey 9 and a Redis Cluster through GLIDE (glide.spec.ts).
 * Where Valkey 9 is not built, GLIDE's cells are on Redis.
 *
 * @example
 * describeCells(cells(KINDS, ([, kind]) => kind === 'ioredis'), (name) => `through ${name}`, (name, kind) => { ... });
 */
export const REST_OF_CELLS = process.env.LOCKWARDEN_TEST_CELLS === 'rest';

/** The rows of `table` this run takes: the suite's in npm test, the others in the matrix. */
export function cells<T>(table: readonly T[], inSuite: (row: T) => boolean): T[] {
  return table.filter((row) => inSuite(row) !== REST_OF_CELLS);
}

/**
 * One `describe` a row, as `describe.each` would make, that also accepts an empty table: a file
 * may have no cell in one of the two runs, and Jest refuses `.each` on an empty array.
 */
export function describeCells<R extends readonly (readonly unknown[])[]>(
  rows: R,
  title: (...row: R[number]) => string,
  body: (...row: R[number]) => void,
): void {
  for (const row of rows) describe(title(...row), () => body(...row));
}

/** `it.each` that accepts an empty table, as `describeCells` does. */
export function itCells<R extends readonly (readonly unknown[])[]>(
  rows: R,
  title: (...row: R[number]) => string,
  body: (...row: R[number]) => Promise<void>,
  timeoutMs?: number,
): void {
  for (const row of rows) it(title(...row), () => body(...row), timeoutMs);
}

/**
 * `describe` for a file's checks that are not cells: npm test runs them, and the matrix's
 * "every cell" leg, which runs the file again for its other cells, skips them.
 */
export const describeOnce: typeof describe = REST_OF_CELLS ? describe.skip : describe;

/** `it` for a check that is not a cell, in a block that holds cells: as `describeOnce`. */
export const itOnce: typeof it = REST_OF_CELLS ? it.skip : it;

/**
 * The server GLIDE's suite cell runs on: Valkey 9 where it was built, as that also covers its
 * own compare-and-delete; Redis elsewhere, and in a matrix leg that reruns the suite on
 * another Redis.
 */
export function glideSuiteServer(valkey9: string | undefined): 'valkey9' | 'redis' {
  return valkey9 ? 'valkey9' : 'redis';
}
