// The bounces of one call: a call from file B back into file A while A's call into B is still
// under way (A → B → A), read from the call chains the debugger sees at each function's entry
// (call-tracer.cjs, a worker that debugs this thread).
import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { ranIn } from './coverage';
import type { ScriptCoverage } from './coverage';

/** One frame of a call chain: its script's URL and its function's name. */
export type Frame = { readonly url: string; readonly name: string };

/**
 * Runs `call` with a breakpoint on every function that ran in `scripts`, and returns the call
 * chain of each entry, in the order of the entries, innermost frame first.
 */
export async function traceEntries(
  scripts: readonly ScriptCoverage[],
  call: () => Promise<unknown>,
): Promise<Frame[][]> {
  const functions = scripts.flatMap((s) =>
    ranIn(s)
      .filter((f) => f.ranges[0].startOffset > 0)
      .map((f) => ({ scriptId: s.scriptId, startOffset: f.ranges[0].startOffset })),
  );
  const worker = new Worker(resolve(__dirname, 'call-tracer.cjs'));
  const next = (): Promise<unknown> => new Promise((done) => worker.once('message', done));
  worker.postMessage({ functions });
  await next();
  await call();
  worker.postMessage('stop');
  const { entries } = (await next()) as { entries: Frame[][] };
  await worker.terminate();
  return entries;
}

/**
 * The bounces: each distinct A → B → A, where a function of A is entered from B while A is
 * still further down the chain (synchronous or awaiting). Counted between library files, and
 * between the library's two layers (nest → core → nest: the engine calling back into the Nest
 * layer), the way a reader following the call would meet them. `fileOf` names a frame's
 * library file, 'app' for the application's code, undefined for anything else (Node, Nest).
 */
export function bounces(entries: readonly Frame[][], fileOf: (frame: Frame) => string | undefined): string[] {
  const found: string[] = [];
  const note = (chain: readonly Frame[], names: string[]): void => {
    const [a, b] = names;
    if (a === undefined || b === undefined || a === 'app' || b === 'app' || !names.slice(2).includes(a)) return;
    const bounce = `${a} → ${b} → ${a}`;
    if (!found.some((x) => x.startsWith(bounce + ' '))) found.push(`${bounce} (${chain[0].name || '(anonymous)'})`);
  };
  for (const chain of entries) {
    const files = collapse(chain.map(fileOf));
    note(chain, files);
    note(chain, collapse(files.map((f) => (f === 'app' ? f : f.split('/')[0]))));
  }
  return found;
}

/** The library files in the order the call first entered them. */
export function entryOrder(entries: readonly Frame[][], fileOf: (frame: Frame) => string | undefined): string[] {
  const order: string[] = [];
  for (const chain of entries) {
    const file = chain.length > 0 ? fileOf(chain[0]) : undefined;
    if (file !== undefined && file !== 'app' && !order.includes(file)) order.push(file);
  }
  return order;
}

/** The names in order, without the undefined ones, and each run of one name as one. */
function collapse(names: (string | undefined)[]): string[] {
  const out: string[] = [];
  for (const name of names) if (name !== undefined && name !== out[out.length - 1]) out.push(name);
  return out;
}
