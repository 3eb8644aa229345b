// npm run acquire-path: which library files run during one warm, uncontended @Locked call on a
// never-seen name (grant, method and release), counted with V8's precise coverage around that
// one call. docs/how-it-works.md lists the files it prints. Starts a throwaway Redis unless
// REDIS_URL is set. `-- --no-otel` counts as an app without OpenTelemetry would run it: no
// metrics, no traces (this repository has the OpenTelemetry API installed, so both are on).
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Session } from 'node:inspector/promises';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
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
  readonly ranges: readonly { readonly count: number }[];
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
    result: { url: string; functions: FunctionCoverage[] }[];
  };
  await session.post('Profiler.stopPreciseCoverage');
  session.disconnect();
  const files = new Map<string, string[]>();
  for (const script of result) {
    const path = script.url.startsWith('file:') ? fileURLToPath(script.url) : script.url;
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
  await app.close();
  await own?.stop();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
