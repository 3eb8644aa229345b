import { spawnSync } from 'node:child_process';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RedisProcess } from '../test/harness/redis-process';
import { makeAdapter } from './adapters';
import { distinct, serial, serverMicros } from './scenarios';

/** The Valkey 9 server tools/valkey9.sh built (at $VALKEY9_SERVER, or in its cache folder), if any. */
export function valkey9Binary(): string | undefined {
  const cache =
    process.env.VALKEY9_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'lockwarden', 'valkey9');
  const bin = process.env.VALKEY9_SERVER || join(cache, 'valkey-server');
  const version = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  return version.status === 0 && / v=9\./.test(version.stdout) ? bin : undefined;
}

/**
 * Scenario 12, on Valkey 9: the uncontended cycle where the release is the server's own
 * `DELIFEQ`, through each client (ioredis, node-redis, GLIDE), against the same server with that command renamed away (so
 * the library finds none, and releases with its script), and against redis-semaphore.
 */
export async function valkey9Cycles(
  bin: string,
  cfg: { serialMs: number; distinctMs: number },
  record: (metric: string, lib: string, value: number) => void,
  progress: (what: string) => void,
): Promise<void> {
  const native = await RedisProcess.start({ binary: bin });
  // rename-command to "" removes the command: COMMAND INFO no longer knows it.
  const scripted = await RedisProcess.start({ binary: bin, args: ['--rename-command', 'DELIFEQ', '""'] });
  const runs: [server: RedisProcess, lib: string, as: string, metric: string][] = [
    [native, 'lockwarden', 'lockwarden', 's12'],
    [native, 'lockwarden node-redis', 'lockwarden', 's12n'],
    [native, 'lockwarden glide', 'lockwarden', 's12g'],
    [native, 'semaphore', 'semaphore', 's12'],
    [native, 'semaphore tuned', 'semaphore tuned', 's12'],
    [scripted, 'lockwarden', 'lockwarden', 's12lua'],
    [scripted, 'lockwarden node-redis', 'lockwarden', 's12nlua'],
    [scripted, 'lockwarden glide', 'lockwarden', 's12glua'],
  ];
  try {
    for (const [server, lib, as, metric] of runs) {
      progress(`Valkey 9 · serial and 64 flows · ${lib}${server === scripted ? ' (scripts)' : ''}`);
      const admin = new Redis(server.url);
      const adapter = makeAdapter(lib, server.url);
      try {
        const s = await serial(adapter, cfg.serialMs, () => admin.config('RESETSTAT'));
        record(`${metric}.redisUs`, as, (await serverMicros(admin)) / s.cycles);
        record(`${metric}.ops`, as, s.opsPerSec);
        record(`${metric}.flows`, as, await distinct(adapter, cfg.distinctMs));
      } finally {
        admin.disconnect();
        await adapter.close();
      }
    }
  } finally {
    await native.destroy();
    await scripted.destroy();
  }
}
