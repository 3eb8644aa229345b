import { analyse, now } from './scenarios';
import type { ContentionResult, Cycle } from './scenarios';
import { runWorkerProcesses } from './worker-processes';

/** Scenario 4: `processes` processes with 2 workers each contend on one key, from one start signal. */
export async function multiProcessContention(
  url: string,
  lib: string,
  ms: number,
  processes = 4,
): Promise<ContentionResult> {
  const key = `mp:${lib}:${Date.now()}`;
  let start = 0;
  const perProcess = await runWorkerProcesses<Cycle[]>(
    url,
    'contention-worker.ts',
    key,
    processes,
    { LIB: lib, MS: String(ms) },
    () => (start = now() + 20),
  );
  const cycles = perProcess.flat();
  return analyse(cycles, start, Math.max(start + ms, ...cycles.map((c) => c.released)));
}
