// One process of scenarios 4 and 13: WORKERS flows contend on a key for a library (holding it
// HOLD_MS, then waiting THINK_MS before asking again), starting when the parent says so, and
// print their cycles as one JSON line.
import { Redis } from 'ioredis';
import { makeAdapter } from './adapters';
import { contend, now } from './scenarios';

async function main(): Promise<void> {
  const { URL: url, LIB, KEY, NAME, WORKERS = '2', MS, HOLD_MS = '2', THINK_MS = '2' } = process.env;
  const adapter = makeAdapter(LIB!, url!);
  const control = new Redis(url!);
  await contend(adapter, `${KEY}:warm:${NAME}`, ['warm'], now() + 150);
  await control.rpush(`${KEY}:ready`, NAME!);
  const [, start] = (await control.blpop(`${KEY}:go:${NAME}`, 0))!;
  const workers = Array.from({ length: Number(WORKERS) }, (_, i) => `${NAME}.${i}`);
  const cycles = await contend(adapter, KEY!, workers, Number(start) + Number(MS), Number(HOLD_MS), Number(THINK_MS));
  process.stdout.write(`${JSON.stringify(cycles)}\n`);
  control.disconnect();
  await adapter.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
