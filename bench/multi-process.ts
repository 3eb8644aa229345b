import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import { analyse, now } from './scenarios';
import type { ContentionResult, Cycle } from './scenarios';

/** Scenario 4: `processes` processes with 2 workers each contend on one key, from one start signal. */
export async function multiProcessContention(
  url: string,
  lib: string,
  ms: number,
  processes = 4,
): Promise<ContentionResult> {
  const key = `mp:${lib}:${Date.now()}`;
  const control = new Redis(url);
  const children = Array.from({ length: processes }, (_, i) => {
    const child = spawn(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', resolve('bench/contention-worker.ts')],
      {
        env: {
          ...process.env,
          TS_NODE_PROJECT: resolve('tsconfig.json'),
          URL: url,
          LIB: lib,
          KEY: key,
          NAME: `p${i}`,
          MS: String(ms),
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    return new Promise<Cycle[]>((done, fail) =>
      child.once('exit', (code) =>
        code === 0 ? done(JSON.parse(out) as Cycle[]) : fail(new Error(`${lib} worker exited ${code}`)),
      ),
    );
  });
  try {
    for (let i = 0; i < processes; i++) await control.blpop(`${key}:ready`, 0);
    const start = now() + 20;
    for (let i = 0; i < processes; i++) await control.rpush(`${key}:go:p${i}`, String(start));
    const cycles = (await Promise.all(children)).flat();
    return analyse(cycles, start, Math.max(start + ms, ...cycles.map((c) => c.released)));
  } finally {
    control.disconnect();
  }
}
