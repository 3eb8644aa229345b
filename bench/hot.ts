// npm run bench:hot   the hot-lock scenarios alone, to look into them between full runs:
// scenario 13 (a hot key across 4 processes, no think time), scenario 4 (the same with think
// time) and, with PERMITS=1, permits across processes. Every library side by side, against a
// throwaway Redis of its own. The figures are for a closer look, not for BENCHMARKS.md.
//
// Environment:
//   LIBS=lockwarden,redlock,...   which libraries (default: lockwarden, redlock, semaphore, semaphore tuned)
//   WAITERS=8,64,512              scenario 13's waiter counts (default 8,64)
//   MS=3000  ROUNDS=1             how long each run lasts, and how many rounds
//   BREAKDOWN=1                   each command's calls and Redis time per grant (INFO commandstats)
//   SLOW=1                        each script's calls and time per call, from SLOWLOG at 0 µs
//   PERMITS=1                     permits across 4 processes (hold 0) instead of the mutex
import type { Redis } from 'ioredis';
import { Redis as Client } from 'ioredis';
import { RedisProcess } from '../test/harness/redis-process';
import { createHash } from 'node:crypto';
import { hotLock } from './hot-lock';
import { multiProcessContention } from './multi-process';
import { multiProcessPermits } from './semaphores';

// The scripts as Redis runs them, from their .lua files (the library's module of them is not
// for outside use).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const embed = require('../tools/embed-lua.cjs') as {
  sources(target: unknown): [string, string][];
  TARGETS: unknown[];
};

/** Our scripts by the start of their SHA-1, so the SLOWLOG's EVALSHA lines read as names. */
const SCRIPT_NAMES = new Map(
  embed
    .sources(embed.TARGETS[0])
    .map(([name, source]) => [createHash('sha1').update(source).digest('hex').slice(0, 8), name]),
);

/** Logs every command from now on (SLOW=1): SLOWLOG with a threshold of 0 µs. */
async function slowStart(admin: Redis): Promise<void> {
  if (!process.env.SLOW) return;
  await admin.config('SET', 'slowlog-log-slower-than', '0');
  await admin.config('SET', 'slowlog-max-len', '200000');
  await admin.slowlog('RESET');
}

/** Prints the logged commands by script (or command): how many, and Redis time each (wall time, so load inflates it). */
async function slowEnd(admin: Redis): Promise<void> {
  if (!process.env.SLOW) return;
  const log = (await admin.slowlog('GET', '200000')) as [number, number, number, string[]][];
  const by = new Map<string, [number, number]>();
  for (const [, , us, args] of log) {
    let name = args[0].toLowerCase();
    if (name === 'evalsha') name = `${SCRIPT_NAMES.get(args[1].slice(0, 8)) ?? args[1].slice(0, 8)}.lua`;
    const [count, total] = by.get(name) ?? [0, 0];
    by.set(name, [count + 1, total + us]);
  }
  for (const [name, [count, us]] of [...by].sort((a, b) => b[1][1] - a[1][1]).slice(0, 12)) {
    console.log(
      `    ${name.padEnd(24)} ${String(count).padStart(7)} calls ${(us / count).toFixed(1).padStart(6)} µs each`,
    );
  }
  await admin.config('SET', 'slowlog-log-slower-than', '10000');
}

async function main(): Promise<void> {
  const libs = (process.env.LIBS ?? 'lockwarden,redlock,semaphore,semaphore tuned').split(',');
  const waiters = (process.env.WAITERS ?? '8,64').split(',').map(Number);
  const ms = Number(process.env.MS ?? 3000);
  const rounds = Number(process.env.ROUNDS ?? 1);
  const own = await RedisProcess.start();
  const admin = new Client(own.url);
  try {
    for (let round = 0; round < rounds; round++) {
      if (process.env.PERMITS) {
        for (const lib of ['lockwarden', 'semaphore', 'semaphore tuned'] as const) {
          await slowStart(admin);
          const p = await multiProcessPermits(own.url, admin, lib, ms, 4);
          console.log(
            `permits ${lib.padEnd(16)} grants/s ${p.opsPerSec.toFixed(0).padStart(6)}  Redis µs/grant ${p.redisCpuUs!.toFixed(0).padStart(4)}  commands/grant ${p.commands!.toFixed(1).padStart(5)}  fairness ${p.fairness.toFixed(2)}  wait p99 ${p.waitP99.toFixed(1)} ms`,
          );
          await slowEnd(admin);
        }
        continue;
      }
      for (const lib of libs) {
        const c = await multiProcessContention(own.url, lib, 2000, 4);
        console.log(
          `s4 ${lib.padEnd(16)} utilisation ${c.utilisation.toFixed(2)}  fairness ${c.fairness.toFixed(2)}  wait p99 ${c.waitP99.toFixed(1)} ms  hand-off p50 ${c.handoffP50.toFixed(2)} ms`,
        );
      }
      for (const w of waiters) {
        for (const lib of libs) {
          await slowStart(admin);
          const h = await hotLock(own.url, admin, lib, ms, w);
          console.log(
            `s13 ${String(w).padStart(3)} ${lib.padEnd(16)} grants/s ${h.grantsPerSec.toFixed(0).padStart(5)}  Redis µs/grant ${h.redisCpuUs.toFixed(0).padStart(4)}  commands/grant ${h.commands.toFixed(1).padStart(5)}  fairness ${h.fairness.toFixed(2)}  wait p99 ${h.waitP99.toFixed(1).padStart(7)} ms  overlaps ${h.overlaps}`,
          );
          if (process.env.BREAKDOWN) {
            const shares = [...h.byCommand].map(([c, v]) => `${c} ${v.calls.toFixed(2)} (${v.usec.toFixed(1)} µs)`);
            console.log(`    per grant: ${shares.join(', ')}`);
          }
          await slowEnd(admin);
        }
      }
    }
  } finally {
    admin.disconnect();
    await own.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
