// One process of scenario 4: two workers contend on a key for a library, starting when the
// parent says so, and print their cycles as one JSON line.
import { Redis } from 'ioredis';
import { makeAdapter } from './adapters';
import { contend, now } from './scenarios';

async function main(): Promise<void> {
  const { URL: url, LIB, KEY, NAME, WORKERS = '2', MS } = process.env;
  const adapter = makeAdapter(LIB!, url!);
  const control = new Redis(url!);
  await contend(adapter, `${KEY}:warm:${NAME}`, ['warm'], now() + 150);
  await control.rpush(`${KEY}:ready`, NAME!);
  const [, start] = (await control.blpop(`${KEY}:go:${NAME}`, 0))!;
  const workers = Array.from({ length: Number(WORKERS) }, (_, i) => `${NAME}.${i}`);
  const cycles = await contend(adapter, KEY!, workers, Number(start) + Number(MS));
  process.stdout.write(`${JSON.stringify(cycles)}\n`);
  control.disconnect();
  await adapter.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
