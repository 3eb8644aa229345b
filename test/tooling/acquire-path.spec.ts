// The acquire path a newcomer reads (docs/how-it-works.md): `npm run acquire-path` counts the
// library files whose functions run during one warm, uncontended @Locked call, and the bounces
// on the way in and out. There is no bounce, and the files the docs list are the ones that ran.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ChildScript, TS_ARGS } from '../harness/child';
import { redisForFile } from '../harness/redis';

const server = redisForFile();

interface Measured {
  files: string[];
  /** The functions that ran, by file, as the tool prints them (the first eight). */
  functions: Map<string, string[]>;
  count: number;
  bounces: number;
}

async function measure(...args: string[]): Promise<Measured> {
  const tool = new ChildScript(
    spawn(process.execPath, [...TS_ARGS, resolve('tools/acquire-path.ts'), ...args], {
      env: { ...process.env, TS_NODE_PROJECT: resolve('tsconfig.json'), REDIS_URL: server.redis.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  expect(await tool.exited).toBe(0);
  const rows = tool.lines.filter((l) => /^(core|nest)\/\S+\.ts {2}\(/.test(l));
  const files = rows.map((l) => l.split(' ')[0]);
  const functions = new Map(rows.map((l) => [l.split(' ')[0], /\(\d+: (.*)\)$/.exec(l)![1].split(', ')]));
  const count = Number(/^(\d+) library files ran/m.exec(tool.lines.join('\n'))?.[1]);
  const bounces = Number(/^(\d+) bounces on the way in and out/m.exec(tool.lines.join('\n'))?.[1]);
  return { files, functions, count, bounces };
}

let on: Awaited<ReturnType<typeof measure>>;

it('crosses the library files the docs list, with metrics and traces on, with no bounce in or out', async () => {
  on = await measure();
  const { files, count, bounces } = on;
  expect(count).toBe(files.length);
  // How many files is printed, not held to a number: a number in a test shapes code to fit it.
  process.stdout.write(`a warm @Locked call ran ${count} library files\n`);
  expect(bounces).toBe(0);
  // The docs name every file the call runs, and nothing reads the options module on a warm call.
  const docs = readFileSync(resolve('docs/how-it-works.md'), 'utf8');
  for (const file of files) expect(docs).toContain(file);
  expect(files).toContain('core/mutex/redis-mutex-store.ts');
  expect(files).not.toContain('core/options/options.ts');
  // The release goes straight to the held releases: the store passes no call on.
  expect(on.functions.get('core/mutex/redis-mutex-store.ts')).not.toContain('releaseHeld');
  expect(on.functions.get('core/mutex/held-releases.ts')).toContain('release');
}, 120_000);

it('runs no OpenTelemetry code without it: only the event hub of telemetry.ts', async () => {
  const off = await measure('--no-otel');
  expect(off.files).toEqual(on.files);
  expect(off.bounces).toBe(0);
  expect(on.functions.get('core/observe/telemetry.ts')).toEqual(expect.arrayContaining(['emit', 'start']));
  expect(off.functions.get('core/observe/telemetry.ts')).toEqual(['emit']);
}, 120_000);
