// npm run acquire-path: the whole corridor of one decorated call, the files a newcomer walks
// through to follow `@Locked` from the decorator to Redis and back. It prints:
//
// - The library files that run during one warm, uncontended call on a name never used before
//   (grant, method and release), with the functions that ran in each, from V8's precise
//   coverage around that one call, mapped to the TypeScript through the source maps. The files
//   are in the order the call first enters them. Code the compiler writes (a re-export's
//   getter in an index.ts) is none of the file's own and does not count. An anonymous function
//   goes under the function it is written in, as "(closure in X)" when X did not run itself.
// - The library files a reader must open to follow that call although none of their code
//   runs. From the functions that ran, the TypeScript compiler API follows what a reader looks
//   up, with what is looked up in each file:
//   - a call through a field, to the field (`engine.lockAndRun`) and to where it was wired: what
//     the constructor assigns it, each member named on the way (`parts.calls.run`), and, for a
//     constructor parameter, where the class is made;
//   - a call through an interface (`store.acquire`), to the interface and to the library's
//     classes implementing it whose member ran, including one that inherits the member;
//   - the types the parameters of the functions that ran are declared with, and those of the
//     fields (`this.x`) they use;
//   - the interfaces and base classes of the classes whose methods ran;
//   - the decorator on the application's method.
//   Only the code that ran is read, block by block (V8 counts them): a branch the call did not
//   take is not followed, nor a call to a plain function that did not run.
// - The release: what runs from the method's return until the call settles.
// - Contended: a second caller waits while the first holds, then gets the lock; the files that
//   run beyond the uncontended call, and those a reader opens for them.
// - A watchdog renewal of a held lease.
// - The same call without OpenTelemetry (no metrics, no traces): this repository has the API
//   installed, so the call above runs with both.
// - The bounces of the uncontended call on the way in and out (bounces.ts).
//
// docs/how-it-works.md shows the printout; `-- --write-docs` rewrites its block (file moves
// change it), `-- --json` prints it with its parts as data, for the tests, and `-- --why` adds
// to each declaration looked up the function that ran that led there first. Starts a
// throwaway Redis unless REDIS_URL is set.
import { readFileSync, writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import type { Node } from 'typescript';
import { RedisProcess } from '../test/harness/redis-process';
import { bounces, entryOrder, traceEntries } from './acquire-path/bounces';
import type { Frame } from './acquire-path/bounces';
import { Coverage, pathOf } from './acquire-path/coverage';
import type { ScriptCoverage } from './acquire-path/coverage';
import { DOC_FILE, withDocBlock } from './acquire-path/doc-block';
import { inLibrary, LIB, Lines, render } from './acquire-path/printout';
import type { Printout } from './acquire-path/printout';
import { Reading, sourceFiles } from './acquire-path/reading';
import type { Ran } from './acquire-path/reading';

const ROOT = resolve(__dirname, '..');

// Before the library loads: V8 counts the blocks (the branches taken) only of the functions it
// compiles once coverage is on.
const coverage = new Coverage();

/** What the measures saw: the coverage of each, and the entries of a second uncontended call. */
interface Measures {
  readonly appFile: string;
  readonly call: { readonly grant: ScriptCoverage[]; readonly release: ScriptCoverage[] };
  readonly plain: { readonly grant: ScriptCoverage[]; readonly release: ScriptCoverage[] };
  readonly renewed: ScriptCoverage[];
  readonly contended: ScriptCoverage[];
  readonly entries: Frame[][];
}

async function measure(url: string): Promise<Measures> {
  const app = await import('./acquire-path/app');
  const on = await app.App.start(url, true);
  const off = await app.App.start(url, false);
  await on.warm();
  await off.warm();
  await app.quiet();
  const call = await app.uncontended(on, coverage, 'never-seen');
  const plain = await app.uncontended(off, coverage, 'never-seen');
  const renewed = await app.renewal(on, coverage, 'never-seen');
  const contended = await app.contended(on, coverage, 'never-seen');
  // Last: with the debugger's breakpoints, V8 no longer counts the blocks of those functions.
  const traced = [...call.grant, ...call.release].filter((s) => counts(pathOf(s.url), app.APP_FILE));
  const entries = await traceEntries(traced, () => on.draws.run('never-seen-too'));
  await on.context.close();
  await off.context.close();
  return { appFile: app.APP_FILE, call, plain, renewed, contended, entries };
}

/** Whether a script is the library's or the application's, whose functions the tool reads. */
function counts(path: string, appFile: string): boolean {
  return inLibrary(path) || path === appFile;
}

/** The printout of what was measured; `why` adds to each declaration looked up the function that led there. */
function corridor(m: Measures, why: boolean): Printout {
  const reading = new Reading([...sourceFiles(LIB), m.appFile], inLibrary, resolve(ROOT, 'tsconfig.json'));
  const nodes = (scripts: ScriptCoverage[]): Ran =>
    reading.nodesOf(coverage.ranFunctions(scripts.filter((s) => counts(pathOf(s.url), m.appFile))));
  const call = nodes([...m.call.grant, ...m.call.release]);
  const contended = nodes(m.contended);
  const renewal = nodes(m.renewed);
  const fileOf = (frame: Frame): string | undefined => {
    const path = pathOf(frame.url);
    if (inLibrary(path)) return relative(LIB, path);
    return path === m.appFile ? 'app' : undefined;
  };
  const order = entryOrder(m.entries, fileOf);
  const ran = ({ nodes }: Ran): [Node, string][] => [...nodes].map((n) => [n, reading.ranName(n, nodes)]);
  const lookups = (measured: Ran): [Node, string][] =>
    [...reading.lookups(measured)].map(([n, from]) => [
      n,
      why ? `${reading.nameOf(n)} (from ${reading.ranName(from, measured.nodes)})` : reading.nameOf(n),
    ]);
  const lines = new Lines(reading);
  const runs = lines.of(ran(call), order);
  const opened = lines.of(lookups(call), [], lines.files(runs));
  const contendedRuns = lines.of(ran(contended), [], lines.files(runs, opened));
  const contendedOpened = lines.of(lookups(contended), [], lines.files(runs, opened, contendedRuns));
  const renewalRuns = lines.of(ran(renewal));
  const seen = lines.files(runs, opened, contendedRuns, contendedOpened, renewalRuns);
  return {
    runs,
    opened,
    release: lines.of(ran(nodes(m.call.release))),
    contended: contendedRuns,
    contendedOpened,
    renewal: renewalRuns,
    renewalOpened: lines.of(lookups(renewal), [], seen),
    withoutOtel: lines.of(ran(nodes([...m.plain.grant, ...m.plain.release])), order),
    bounces: bounces(m.entries, fileOf),
  };
}

async function main(): Promise<void> {
  const own = process.env.REDIS_URL ? undefined : await RedisProcess.start();
  try {
    const measures = await measure(process.env.REDIS_URL ?? own!.url);
    const writeDocs = process.argv.includes('--write-docs');
    const printout = corridor(measures, process.argv.includes('--why') && !writeDocs);
    coverage.stop();
    const text = render(printout);
    if (process.argv.includes('--json')) console.log(JSON.stringify({ text, ...printout }));
    else console.log(text);
    if (writeDocs) {
      const doc = resolve(ROOT, DOC_FILE);
      writeFileSync(doc, withDocBlock(readFileSync(doc, 'utf8'), text));
      console.error(`Wrote the printout into ${DOC_FILE}.`);
    }
  } finally {
    await own?.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  // A measure that failed may leave an application open, with its connections.
  process.exit(1);
});
