import type { LoggerService } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { mutexKeys } from '../../libs/lockwarden/src/core/backend/lock-keys';
import { redisForFile, uniquePrefix } from './redis';
import type { FileRedis } from './redis';

/**
 * What the handlers of the context tests (microservice, gateway, GraphQL) share: gates the
 * test opens to end a run, the runs' own record of their lock's signal, a logger that keeps
 * its errors, and a look at a lock through Redis itself rather than through the library.
 */

/** Work a handler waits on, per id: the test decides when each run ends. */
export class Gates {
  private readonly gates = new Map<number, { open: () => void; opened: Promise<void> }>();

  /** Closes the gate of `id`: a run for it waits until `open()`. */
  close(id: number): { open: () => void } {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    this.gates.set(id, { open, opened });
    return { open };
  }

  /** What a run for `id` waits on: its gate, or nothing once it was removed or never closed. */
  passed(id: number): Promise<void> {
    return this.gates.get(id)?.opened ?? Promise.resolve();
  }

  remove(id: number): void {
    this.gates.delete(id);
  }
}

/** Each run's own record: the signal of its lock, and a promise settled when it returned. */
export class Runs {
  private readonly runs = new Map<number, { signal: AbortSignal; done: Promise<void> }>();

  /** Records a run of `id` holding a lock with `signal`; call the returned function as it returns. */
  start(id: number, signal: AbortSignal): () => void {
    let finish!: () => void;
    this.runs.set(id, { signal, done: new Promise<void>((resolve) => (finish = resolve)) });
    return finish;
  }

  /** The run of `id`, once it has started (waits on the event loop, not on a clock). */
  async started(id: number): Promise<{ signal: AbortSignal; done: Promise<void> }> {
    for (;;) {
      const run = this.runs.get(id);
      if (run) return run;
      await new Promise((r) => setImmediate(r));
    }
  }
}

/** A Nest logger that keeps its errors, so a test can say that nothing was logged at ERROR. */
export function recordingLogger(): { logger: LoggerService; errors: string[] } {
  const errors: string[] = [];
  const logger: LoggerService = {
    log: () => undefined,
    warn: () => undefined,
    error: (message: unknown) => errors.push(String(message)),
  };
  return { logger, errors };
}

/** Whether the mutex `key` under `prefix` is held, read from its key with a client of the test's own. */
export async function mutexHeld(client: Redis, prefix: string, key: string): Promise<boolean> {
  return (await client.exists(mutexKeys(prefix, key).lock)) === 1;
}

/**
 * The rule for a caller that goes away while its handler runs, checked from outside: once
 * `goAway()` cut the caller off, the run's lock signal aborts saying the caller went away,
 * while the lock's Redis key stays until the test lets the run end (`gate.open()`); then it
 * goes. `run` is the run's record (Runs.started), and the run must be waiting on `gate`.
 */
export async function expectHeldUntilReturn(
  run: { signal: AbortSignal; done: Promise<void> },
  gate: { open: () => void },
  goAway: () => unknown,
  admin: Redis,
  prefix: string,
  key: string,
): Promise<void> {
  const { signal, done } = run;
  expect(signal.aborted).toBe(false);
  const aborted = new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason)));
  await goAway();
  expect(String(await aborted)).toMatch(/caller went away/);
  // The handler still runs: its lock is still held, by Redis's own account.
  expect(await mutexHeld(admin, prefix, key)).toBe(true);
  gate.open();
  await done;
  while (await mutexHeld(admin, prefix, key)) await new Promise((r) => setTimeout(r, 5));
}

/**
 * What a context spec (microservice, gateway, GraphQL) starts from: a Redis of its own (see
 * redisForFile), the gates and runs its handlers share with the test, a logger that keeps its
 * errors, and the key prefix of its app's locks.
 */
export function handlerRunsForFile(name: string): {
  server: FileRedis;
  gates: Gates;
  runs: Runs;
  logger: LoggerService;
  errors: string[];
  prefix: string;
} {
  return {
    server: redisForFile(),
    gates: new Gates(),
    runs: new Runs(),
    ...recordingLogger(),
    prefix: uniquePrefix(name),
  };
}
