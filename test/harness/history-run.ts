import { workersForFile } from './child';
import { checkHistory, type Section } from './history';
import { uniquePrefix } from './redis';

/**
 * The history check's run: 10 000 critical sections from 4 processes with 2 flows each on 4
 * keys, checked for overlap between live holders and for fencing tokens that rise in entry order.
 */
const PROCESSES = 4;
const FLOWS = 2;
const SECTIONS = 1_250; // per flow: 4 × 2 × 1 250 = 10 000

/**
 * Runs the history workers with `env` (where Redis is, and which client) and gives their
 * sections. Call it at a spec file's top level: the workers of a test are killed after it.
 */
export function historyRunner(): (env: Record<string, string>) => Promise<Section[]> {
  const worker = workersForFile();
  return async (env) => {
    const PREFIX = uniquePrefix('history');
    const workers = Array.from({ length: PROCESSES }, () =>
      worker('history-worker', { ...env, PREFIX, KEYS: '4', FLOWS: String(FLOWS), SECTIONS: String(SECTIONS) }),
    );
    // Bounded below the test's own timeout, so a worker that hangs says where: connecting, or
    // in its sections (it prints them all at the end), with what it wrote to stderr.
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const states = workers.map(
          (w, i) =>
            `worker ${i}: ${w.exitStatus === undefined ? 'still running' : `exited ${w.exitStatus}`}, ` +
            `${w.lines.includes('connected') ? 'connected' : 'not connected'}, ${w.lines.length} lines; ` +
            `stderr: ${w.stderrTail(800)}`,
        );
        reject(new Error(`the history workers did not finish within 150 s:\n${states.join('\n')}`));
      }, 150_000);
    });
    try {
      await Promise.race([Promise.all(workers.map((w) => w.succeeded())), hung]);
    } finally {
      clearTimeout(timer);
    }
    return workers.flatMap((w) =>
      w.lines.filter((l) => l.startsWith('section ')).map((l) => JSON.parse(l.slice(8)) as Section),
    );
  };
}

/** All 10 000 sections ran, on every key, and no two live holders overlapped. */
export function expectClean(sections: Section[]): void {
  expect(sections).toHaveLength(PROCESSES * FLOWS * SECTIONS);
  expect(checkHistory(sections)).toEqual([]);
  // Every key really was contended by several processes.
  expect(new Set(sections.map((s) => s.key)).size).toBe(4);
}
