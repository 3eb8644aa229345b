// One process of scenario 10's multi-process run: WORKERS flows take and give back one permit
// each in a loop (holding it HOLD_MS, then waiting THINK_MS before asking again), starting when
// the parent says so, and print their count and waits as JSON.
import { Redis } from 'ioredis';
import { permitTaker, type PermitLib } from './semaphores';

async function main(): Promise<void> {
  const { URL: url, LIB, KEY, NAME, WORKERS = '4', PERMITS = '4', MS, HOLD_MS = '0', THINK_MS = '0' } = process.env;
  const holdMs = Number(HOLD_MS);
  const thinkMs = Number(THINK_MS);
  const pause = (ms: number): Promise<void> | undefined =>
    ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : undefined;
  const lib = LIB as PermitLib;
  const { take, close } = permitTaker(lib, url!, KEY!, Number(PERMITS));
  const control = new Redis(url!);
  const loop = async (until: number, waits: number[]): Promise<number> => {
    let count = 0;
    while (performance.now() < until) {
      const asked = performance.now();
      const permit = await take();
      waits.push(performance.now() - asked);
      await pause(holdMs);
      await permit.release();
      count++;
      await pause(thinkMs);
    }
    return count;
  };
  const flows = (until: number, waits: number[]): Promise<number[]> =>
    Promise.all(Array.from({ length: Number(WORKERS) }, () => loop(until, waits)));
  await flows(performance.now() + 150, []);
  await control.rpush(`${KEY}:ready`, NAME!);
  const [, startsIn] = (await control.blpop(`${KEY}:go:${NAME}`, 0))!;
  await new Promise((r) => setTimeout(r, Math.max(0, Number(startsIn) - Date.now())));
  const waits: number[] = [];
  const cpuBefore = process.cpuUsage();
  const counts = await flows(performance.now() + Number(MS), waits);
  const cpu = process.cpuUsage(cpuBefore);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  process.stdout.write(`${JSON.stringify({ count: counts.reduce((a, b) => a + b, 0), waits, cpuMs })}\n`);
  control.disconnect();
  await close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
