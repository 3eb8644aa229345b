import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';

/**
 * Runs `processes` copies of a bench worker script, each told its NAME (`p0`, `p1`, …), KEY
 * and the given environment. Each pushes its name to `<key>:ready` once warmed up; once all
 * are ready, each is sent the common start time from `startAt()` on `<key>:go:<name>` (it may
 * first read the server's figures, as scenario 13 does). It
 * resolves every worker's one JSON line of output, in order.
 */
export async function runWorkerProcesses<T>(
  url: string,
  script: string,
  key: string,
  processes: number,
  env: Record<string, string>,
  startAt: () => number | Promise<number>,
): Promise<T[]> {
  const control = new Redis(url);
  const children = Array.from({ length: processes }, (_, i) => {
    // BENCH_PROFILE=<folder>: each worker writes a CPU profile there (node --cpu-prof).
    const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
    const child = spawn(
      process.execPath,
      [...profile, '-r', resolve('tools/ts-register.cjs'), resolve('bench', script)],
      {
        env: { ...process.env, TS_NODE_PROJECT: resolve('tsconfig.json'), URL: url, KEY: key, NAME: `p${i}`, ...env },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    return new Promise<T>((done, fail) =>
      child.once('exit', (code) =>
        code === 0 ? done(JSON.parse(out) as T) : fail(new Error(`${script} (${JSON.stringify(env)}) exited ${code}`)),
      ),
    );
  });
  try {
    for (let i = 0; i < processes; i++) await control.blpop(`${key}:ready`, 0);
    const start = await startAt();
    for (let i = 0; i < processes; i++) await control.rpush(`${key}:go:p${i}`, String(start));
    return await Promise.all(children);
  } finally {
    control.disconnect();
  }
}
