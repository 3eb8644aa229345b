// npm run acquire-path: which library files run during one warm, uncontended @Locked call on a
// never-seen name (grant, method and release), counted with V8's precise coverage around that
// one call. docs/how-it-works.md lists the files it prints. Starts a throwaway Redis unless
// REDIS_URL is set. `-- --no-otel` counts as an app without OpenTelemetry would run it: no
// metrics, no traces (this repository has the OpenTelemetry API installed, so both are on).
// It then counts the bounces of a second such call, on the way in and on the way out (grant,
// method and release): a call from file B back into file A while A's call into B is still
// under way (A → B → A), read from the call chains of that call (tools/call-tracer.cjs).
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Session } from 'node:inspector/promises';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Locked, LockModule } from '../libs/lockwarden/src';
import { RedisProcess } from '../test/harness/redis-process';

const LIB = resolve(__dirname, '../libs/lockwarden/src');

@Injectable()
class Draws {
  @Locked('draw:{0}')
  async run(id: string): Promise<string> {
    return id;
  }
}

interface FunctionCoverage {
  readonly functionName: string;
  readonly ranges: readonly { readonly count: number; readonly startOffset: number }[];
}
interface ScriptCoverage {
  readonly scriptId: string;
  readonly url: string;
  readonly functions: FunctionCoverage[];
}
type Frame = { readonly url: string; readonly name: string };

function pathOf(url: string): string {
  return url.startsWith('file:') ? fileURLToPath(url) : url;
}

/** The library file of a frame, 'app' for this file, undefined for anything else (Node, Nest). */
function fileOf(frame: Frame): string | undefined {
  const path = pathOf(frame.url);
  if (path.startsWith(LIB)) return relative(LIB, path);
  return path === __filename ? 'app' : undefined;
}

/**
 * Runs `call` with a breakpoint on every function that ran in `scripts`, and returns the call
 * chain of each entry, innermost first.
 */
async function traceEntries(scripts: ScriptCoverage[], call: () => Promise<unknown>): Promise<Frame[][]> {
  const functions = scripts.flatMap((s) =>
    s.functions
      .filter((f) => f.ranges[0].count > 0 && f.ranges[0].startOffset > 0)
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
 * layer), the way a reader following the call would meet them. The method itself is the app's.
 */
function bounces(entries: Frame[][]): string[] {
  const bounces: string[] = [];
  const note = (chain: Frame[], names: string[]): void => {
    const [a, b] = names;
    if (a === undefined || b === undefined || a === 'app' || b === 'app' || !names.slice(2).includes(a)) return;
    const bounce = `${a} → ${b} → ${a}`;
    if (!bounces.some((x) => x.startsWith(bounce + ' '))) bounces.push(`${bounce} (${chain[0].name || '(anonymous)'})`);
  };
  for (const chain of entries) {
    const files = collapse(chain.map(fileOf));
    note(chain, files);
    note(chain, collapse(files.map((f) => (f === 'app' ? f : f.split('/')[0]))));
  }
  return bounces;
}

/** The names in order, without the undefined ones, and each run of one name as one. */
function collapse(names: (string | undefined)[]): string[] {
  const out: string[] = [];
  for (const name of names) if (name !== undefined && name !== out[out.length - 1]) out.push(name);
  return out;
}

async function main(): Promise<void> {
  const own = process.env.REDIS_URL ? undefined : await RedisProcess.start();
  const url = process.env.REDIS_URL ?? own!.url;
  const otel = !process.argv.includes('--no-otel');
  @Module({
    imports: [
      LockModule.forRoot({
        redis: url,
        keyPrefix: `acquire-path:${Date.now()}:`,
        ...(otel ? {} : { metrics: false, traces: false }),
      }),
    ],
    providers: [Draws],
  })
  class AppModule {}
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const draws = app.get(Draws);
  // Warm: every module loaded, the scripts cached, the connection up, a first grant made.
  for (let i = 0; i < 50; i++) await draws.run(`warm-${i}`);
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
  await session.post('Profiler.takePreciseCoverage'); // resets the counts
  await draws.run('never-seen');
  const { result } = (await session.post('Profiler.takePreciseCoverage')) as {
    result: ScriptCoverage[];
  };
  await session.post('Profiler.stopPreciseCoverage');
  session.disconnect();
  const files = new Map<string, string[]>();
  for (const script of result) {
    const path = pathOf(script.url);
    if (!path.startsWith(LIB)) continue;
    const ran = script.functions.filter((f) => f.ranges[0].count > 0);
    if (ran.length > 0)
      files.set(
        relative(LIB, path),
        ran.map((f) => f.functionName || '(anonymous)'),
      );
  }
  const sorted = [...files.keys()].sort();
  for (const file of sorted)
    console.log(`${file}  (${files.get(file)!.length}: ${files.get(file)!.slice(0, 8).join(', ')})`);
  console.log(
    `${sorted.length} library files ran during one warm, uncontended @Locked call` +
      (otel ? ' (metrics and traces on)' : ' (no metrics, no traces)'),
  );
  const traced = result.filter((s) => pathOf(s.url).startsWith(LIB) || pathOf(s.url) === __filename);
  const found = bounces(await traceEntries(traced, () => draws.run('never-seen-too')));
  for (const bounce of found) console.log(`  bounce: ${bounce}`);
  console.log(`${found.length} bounces on the way in and out (grant, method, release)`);
  await app.close();
  await own?.stop();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
