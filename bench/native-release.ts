import { spawnSync } from 'node:child_process';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { GlideClient } from '@valkey/valkey-glide';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { RedisProcess } from '../test/harness/redis-process';
import { makeAdapter } from './adapters';
import { distinct, serial, serverMicros } from './scenarios';

/** A server with its own compare-and-delete, which scenario 12 measures. */
export interface NativeServer {
  /** As its rows name it. */
  readonly name: 'Valkey 9' | 'Redis 8.6';
  /** The server binary its build script made. */
  readonly bin: string;
  /** Its compare-and-delete: renamed away, the library finds none and releases with its script. */
  readonly command: 'DELIFEQ' | 'DELEX';
  /** The start of its metric ids: `s12` (Valkey 9, as before Redis 8 had rows), `s12r`. */
  readonly metric: string;
}

/**
 * The binary a build script left (at $<env>, or in its cache folder, as the script does), if it
 * is there and of the version asked.
 */
function built(env: string, cacheEnv: string, folder: string, file: string, version: RegExp): string | undefined {
  const cache =
    process.env[cacheEnv] ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'lockwarden', folder);
  const bin = process.env[env] || join(cache, file);
  const run = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  return run.status === 0 && version.test(run.stdout) ? bin : undefined;
}

/**
 * The servers scenario 12 runs on, those built here: Valkey 9 (tools/valkey9.sh, `DELIFEQ`) and
 * Redis 8.6 (tools/redis8.sh, `DELEX … IFEQ`).
 */
export function nativeServers(): NativeServer[] {
  const valkey9 = built('VALKEY9_SERVER', 'VALKEY9_CACHE', 'valkey9', 'valkey-server', / v=9\./);
  const redis8 = built('REDIS8_SERVER', 'REDIS8_CACHE', 'redis8', 'redis-server', / v=8\.6\./);
  return [
    ...(valkey9 ? [{ name: 'Valkey 9', bin: valkey9, command: 'DELIFEQ', metric: 's12' } as const] : []),
    ...(redis8 ? [{ name: 'Redis 8.6', bin: redis8, command: 'DELEX', metric: 's12r' } as const] : []),
  ];
}

/**
 * Scenario 12, on one server with its own compare-and-delete: the uncontended cycle where the
 * release is that command, through each client (ioredis, node-redis, GLIDE), against the same
 * server with the command renamed away (so the library finds none, and releases with its
 * script), and against redis-semaphore.
 */
export async function nativeCycles(
  server: NativeServer,
  cfg: { serialMs: number; distinctMs: number },
  record: (metric: string, lib: string, value: number) => void,
  progress: (what: string) => void,
): Promise<void> {
  const m = server.metric;
  const native = await RedisProcess.start({ binary: server.bin });
  // rename-command to "" removes the command: COMMAND INFO no longer knows it.
  const scripted = await RedisProcess.start({ binary: server.bin, args: ['--rename-command', server.command, '""'] });
  // Each client's native and script runs back to back, so the pair meets the same machine load.
  const runs: [server: RedisProcess, lib: string, as: string, metric: string][] = [
    [native, 'lockwarden', 'lockwarden', m],
    [scripted, 'lockwarden', 'lockwarden', `${m}lua`],
    [native, 'lockwarden node-redis', 'lockwarden', `${m}n`],
    [scripted, 'lockwarden node-redis', 'lockwarden', `${m}nlua`],
    [native, 'lockwarden glide', 'lockwarden', `${m}g`],
    [scripted, 'lockwarden glide', 'lockwarden', `${m}glua`],
    [native, 'semaphore', 'semaphore', m],
    [native, 'semaphore tuned', 'semaphore tuned', m],
  ];
  try {
    for (const [on, lib, as, metric] of runs) {
      progress(`${server.name} · serial and 64 flows · ${lib}${on === scripted ? ' (scripts)' : ''}`);
      const admin = new Redis(on.url);
      const adapter = makeAdapter(lib, on.url);
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
      ['ioredis', `${m}b`],
      ['node-redis', `${m}nb`],
      ['glide', `${m}gb`],
    ] as const) {
      progress(`${server.name} · a bare SET round trip · ${client}`);
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
