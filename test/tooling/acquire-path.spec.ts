// The acquire path a newcomer reads (docs/how-it-works.md): `npm run acquire-path` counts the
// library files whose functions run during one warm, uncontended @Locked call, and the bounces
// on the way in. The limits hold, and the files the docs list in order are the ones that ran.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ChildScript, TS_ARGS } from '../harness/child';
import { startRedis, type RedisTarget } from '../harness/redis';

let redis: RedisTarget;
beforeAll(async () => (redis = await startRedis()));
afterAll(() => redis?.stop());

async function measure(...args: string[]): Promise<{ files: string[]; count: number; bounces: number }> {
  const tool = new ChildScript(
    spawn(process.execPath, [...TS_ARGS, resolve('tools/acquire-path.ts'), ...args], {
      env: { ...process.env, TS_NODE_PROJECT: resolve('tsconfig.json'), REDIS_URL: redis.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  expect(await tool.exited).toBe(0);
  const files = tool.lines.filter((l) => /^(core|nest)\/\S+\.ts {2}\(/.test(l)).map((l) => l.split(' ')[0]);
  const count = Number(/^(\d+) library files ran/m.exec(tool.lines.join('\n'))?.[1]);
  const bounces = Number(/^(\d+) bounces on the way in/m.exec(tool.lines.join('\n'))?.[1]);
  return { files, count, bounces };
}

let on: Awaited<ReturnType<typeof measure>>;

it('crosses at most 18 library files with metrics and traces on, with at most 3 bounces on the way in', async () => {
  on = await measure();
  const { files, count, bounces } = on;
  expect(count).toBe(files.length);
  expect(count).toBeLessThanOrEqual(18);
  expect(bounces).toBeLessThanOrEqual(3);
  // The docs name every file the call runs, and nothing reads the options module on a warm call.
  const docs = readFileSync(resolve('docs/how-it-works.md'), 'utf8');
  for (const file of files) expect(docs).toContain(file);
  expect(files).toContain('core/redis/redis-store.ts');
  expect(files).not.toContain('core/options/options.ts');
}, 120_000);

it('crosses one file fewer without OpenTelemetry', async () => {
  const off = await measure('--no-otel');
  expect(off.files).toEqual(on.files.filter((f) => f !== 'core/observe/telemetry.ts'));
}, 120_000);
