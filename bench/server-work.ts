import type { Redis } from 'ioredis';

/** The bench's own commands: the start signal and its statistics, not the library's work. */
const OWN = new Set(['info', 'config', 'rpush', 'blpop', 'hello', 'client', 'select']);

/** Redis' own CPU so far (INFO cpu: user + sys of the whole server), µs. */
export async function serverCpuUs(admin: Redis): Promise<number> {
  const cpu = await admin.info('cpu');
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

/** One command's share of a run: how often it ran, and Redis' time in it (INFO commandstats' usec). */
export interface CommandShare {
  readonly calls: number;
  readonly usec: number;
}

/** Commands Redis ran since the last RESETSTAT, by name, a script's inner calls included, the bench's own left out. */
export async function commandShares(admin: Redis): Promise<Map<string, CommandShare>> {
  const stats = await admin.info('commandstats');
  const shares = new Map<string, CommandShare>();
  for (const [, command, n, usec] of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    if (!OWN.has(command.split('|')[0])) shares.set(command, { calls: Number(n), usec: Number(usec) });
  }
  return shares;
}

/** Commands Redis ran since the last RESETSTAT, a script's inner calls included, the bench's own left out. */
export async function commandCalls(admin: Redis): Promise<number> {
  let calls = 0;
  for (const share of (await commandShares(admin)).values()) calls += share.calls;
  return calls;
}

/** What Redis spent on a timed run: call `start` as it begins and `per` with its grants once it ended. */
export interface ServerWork {
  start(): Promise<void>;
  /** Redis CPU (µs) and commands per grant since `start`. */
  per(grants: number): Promise<{
    readonly cpuUs: number;
    readonly commands: number;
    /** Each command's calls and Redis time (µs) per grant; a script's time includes its inner calls'. */
    readonly byCommand: Map<string, CommandShare>;
  }>;
}

/** Counts Redis' CPU and commands around one timed run, through `admin` (a client of the bench's own). */
export function serverWork(admin: Redis): ServerWork {
  let cpuBefore = 0;
  return {
    async start() {
      await admin.config('RESETSTAT');
      cpuBefore = await serverCpuUs(admin);
    },
    async per(grants) {
      const cpu = (await serverCpuUs(admin)) - cpuBefore;
      const byCommand = new Map<string, CommandShare>();
      let commands = 0;
      for (const [name, share] of await commandShares(admin)) {
        commands += share.calls;
        byCommand.set(name, { calls: share.calls / grants, usec: share.usec / grants });
      }
      return { cpuUs: cpu / grants, commands: commands / grants, byCommand };
    },
  };
}
