import type { Redis } from 'ioredis';
import { analyse, now } from './scenarios';
import type { Cycle } from './scenarios';
import { serverWork } from './server-work';
import type { CommandShare } from './server-work';
import { runWorkerProcesses } from './worker-processes';

/** What a hot lock cost and gave, across processes. */
export interface HotLockResult {
  readonly grantsPerSec: number;
  /** Redis' own CPU (INFO cpu: user + sys of the whole server) per grant. */
  readonly redisCpuUs: number;
  /** Commands Redis ran per grant, a script's inner calls included (INFO commandstats). */
  readonly commands: number;
  /** Grants of the process served least over those of the one served most. */
  readonly fairness: number;
  readonly waitP99: number;
  readonly overlaps: number;
  /** Each command's calls and Redis time (µs) per grant (INFO commandstats). */
  readonly byCommand: Map<string, CommandShare>;
}

/**
 * Scenario 13: a hot lock. `processes` processes share one key with `waiters` flows in all;
 * each acquires, holds `holdMs`, releases and asks again at once. Redis' CPU and commands are
 * read around the timed run, so the warm-up and the start signal are not counted.
 */
export async function hotLock(
  url: string,
  admin: Redis,
  lib: string,
  ms: number,
  waiters: number,
  processes = 4,
  holdMs = 1,
): Promise<HotLockResult> {
  const key = `hot:${lib.replace(/ /g, '-')}:${waiters}:${Date.now()}`;
  let start = 0;
  const work = serverWork(admin);
  const perProcess = await runWorkerProcesses<Cycle[]>(
    url,
    'contention-worker.ts',
    key,
    processes,
    { LIB: lib, MS: String(ms), WORKERS: String(waiters / processes), HOLD_MS: String(holdMs), THINK_MS: '0' },
    async () => {
      await work.start();
      return (start = now() + 20);
    },
  );
  const cycles = perProcess.flat();
  const result = analyse(cycles, start, Math.max(start + ms, ...cycles.map((c) => c.released)));
  const { cpuUs, commands, byCommand } = await work.per(cycles.length);
  const perProcessGrants = perProcess.map((c) => c.length);
  return {
    grantsPerSec: result.cyclesPerSec,
    redisCpuUs: cpuUs,
    commands,
    fairness: Math.min(...perProcessGrants) / Math.max(...perProcessGrants),
    waitP99: result.waitP99,
    overlaps: result.overlaps,
    byCommand,
  };
}
