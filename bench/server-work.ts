import type { Redis } from 'ioredis';

/** The bench's own commands: the start signal and its statistics, not the library's work. */
const OWN = new Set(['info', 'config', 'rpush', 'blpop', 'hello', 'client', 'select']);

/** Redis' own CPU so far (INFO cpu: user + sys of the whole server), µs. */
export async function serverCpuUs(admin: Redis): Promise<number> {
  const cpu = await admin.info('cpu');
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

/** Commands Redis ran since the last RESETSTAT, a script's inner calls included, the bench's own left out. */
export async function commandCalls(admin: Redis): Promise<number> {
  const stats = await admin.info('commandstats');
  let calls = 0;
  for (const [, command, n] of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (!OWN.has(command.split('|')[0])) calls += Number(n);
  }
  return calls;
}

/** What Redis spent on a timed run: call `start` as it begins and `per` with its grants once it ended. */
export interface ServerWork {
  start(): Promise<void>;
  /** Redis CPU (µs) and commands per grant since `start`. */
  per(grants: number): Promise<{ readonly cpuUs: number; readonly commands: number }>;
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
      return { cpuUs: cpu / grants, commands: (await commandCalls(admin)) / grants };
    },
  };
}
