import { spawnSync } from 'node:child_process';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { GlideClient } from '@valkey/valkey-glide';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
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
  // Each client's native and script runs back to back, so the pair meets the same machine load.
  const runs: [server: RedisProcess, lib: string, as: string, metric: string][] = [
    [native, 'lockwarden', 'lockwarden', 's12'],
    [scripted, 'lockwarden', 'lockwarden', 's12lua'],
    [native, 'lockwarden node-redis', 'lockwarden', 's12n'],
    [scripted, 'lockwarden node-redis', 'lockwarden', 's12nlua'],
    [native, 'lockwarden glide', 'lockwarden', 's12g'],
    [scripted, 'lockwarden glide', 'lockwarden', 's12glua'],
    [native, 'semaphore', 'semaphore', 's12'],
    [native, 'semaphore tuned', 'semaphore tuned', 's12'],
  ];
  try {
    for (const [server, lib, as, metric] of runs) {
      progress(`Valkey 9 · serial and 64 flows · ${lib}${server === scripted ? ' (scripts)' : ''}`);
      const admin = new Redis(server.url);
      const adapter = makeAdapter(lib, server.url);
      try {
        let cpu: NodeJS.CpuUsage | undefined;
        const s = await serial(adapter, cfg.serialMs, async () => {
          await admin.config('RESETSTAT');
          cpu = process.cpuUsage();
        });
        const used = process.cpuUsage(cpu);
        // The whole process: GLIDE's own threads included.
        record(`${metric}.cpu`, as, (used.user + used.system) / s.cycles);
        record(`${metric}.redisUs`, as, (await serverMicros(admin)) / s.cycles);
        record(`${metric}.ops`, as, s.opsPerSec);
        record(`${metric}.flows`, as, await distinct(adapter, cfg.distinctMs));
      } finally {
        admin.disconnect();
        await adapter.close();
      }
    }
    // What one bare command costs each client, no lock involved: an uncontended cycle is two.
    for (const [client, metric] of [
      ['ioredis', 's12b'],
      ['node-redis', 's12nb'],
      ['glide', 's12gb'],
    ] as const) {
      progress(`Valkey 9 · a bare SET round trip · ${client}`);
      const bare = await bareRoundTrips(client, native, cfg.serialMs);
      record(`${metric}.ops`, 'lockwarden', bare.opsPerSec);
      record(`${metric}.cpu`, 'lockwarden', bare.cpuUs);
    }
  } finally {
    await native.destroy();
    await scripted.destroy();
  }
}

/** Serial `SET` round trips through a bare client: how many a second, and the process's CPU µs for each. */
async function bareRoundTrips(
  client: 'ioredis' | 'node-redis' | 'glide',
  server: RedisProcess,
  ms: number,
): Promise<{ opsPerSec: number; cpuUs: number }> {
  let set: () => Promise<unknown>;
  let close: () => Promise<unknown>;
  if (client === 'ioredis') {
    const c = new Redis(server.url);
    set = () => c.set('bare', '1');
    close = async () => c.disconnect();
  } else if (client === 'node-redis') {
    const c = await createClient({ url: server.url }).connect();
    set = () => c.set('bare', '1');
    close = () => c.close();
  } else {
    const c = await GlideClient.createClient({ addresses: [{ host: server.host, port: server.port }] });
    set = () => c.customCommand(['SET', 'bare', '1']);
    close = async () => c.close();
  }
  try {
    const warm = performance.now() + Math.min(200, ms / 4);
    while (performance.now() < warm) await set();
    const cpu = process.cpuUsage();
    const start = performance.now();
    let n = 0;
    while (performance.now() - start < ms) {
      await set();
      n++;
    }
    const used = process.cpuUsage(cpu);
    return { opsPerSec: (n * 1000) / (performance.now() - start), cpuUs: (used.user + used.system) / n };
  } finally {
    await close();
  }
}
