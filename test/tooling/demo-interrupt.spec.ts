// Ctrl-C during `npm run demo`: one line, every process it started removed, exit code 130.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { ChildScript, TS_ARGS } from '../harness/child';
import { startRedis } from '../harness/redis';

it('stops on SIGINT mid-round with one line of output and exit code 130', async () => {
  const env: NodeJS.ProcessEnv = { ...process.env, TS_NODE_PROJECT: resolve('tsconfig.json') };
  delete env.REDIS_URL; // its own throwaway Redis, removed on exit
  const demo = new ChildScript(
    spawn(process.execPath, [...TS_ARGS, '-r', 'tsconfig-paths/register', resolve('apps/lottery/demo/main.ts')], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let stderr = '';
  demo.child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  // Three instance processes are up, a round is starting: the last line printed before the
  // first round (the lines before it may come in separate reads).
  await demo.waitFor(/^Live lock dashboard/);
  const before = demo.lines.length;
  demo.kill('SIGINT');
  expect(await demo.exited).toBe(130);
  expect(demo.lines.slice(before).filter((l) => l.trim() !== '')).toEqual([
    "SIGINT: stopped; the demo's processes and Redis are being removed.",
  ]);
  expect(stderr).toBe('');
}, 60_000);

it('removes every key it wrote in a Redis of yours, even when interrupted', async () => {
  const yours = await startRedis({ own: true });
  const admin = yours.client();
  try {
    await admin.set('yours:keep', "this is not the demo's");
    const demo = new ChildScript(
      spawn(process.execPath, [...TS_ARGS, '-r', 'tsconfig-paths/register', resolve('apps/lottery/demo/main.ts')], {
        env: { ...process.env, TS_NODE_PROJECT: resolve('tsconfig.json'), REDIS_URL: yours.url },
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    await demo.waitFor(/the demo writes keys under lottery:\* and lock:\{lottery:\* and removes them/);
    await demo.waitFor(/^Instances: /);
    expect((await admin.keys('lottery:*')).length).toBeGreaterThan(0); // it did write
    demo.kill('SIGINT');
    expect(await demo.exited).toBe(130);
    expect(await admin.keys('*')).toEqual(['yours:keep']);
  } finally {
    admin.disconnect();
    await yours.stop();
  }
}, 60_000);
