// The application `npm run acquire-path` measures: one provider with @Locked methods, on a
// LockModule of its own, and the three ways the tool calls them (uncontended, contended, held
// through a renewal), each cut where coverage is taken.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Locked, LockModule } from '../../libs/lockwarden/src';
import type { LockEvent } from '../../libs/lockwarden/src';
import type { Coverage, ScriptCoverage } from './coverage';

/** This file: its functions are the application's, not the library's. */
export const APP_FILE = __filename;

/**
 * The measured app's commandTimeoutMs. Coverage counts whatever runs while a call is measured:
 * with the default 2 s, a call that a loaded machine slowed past a sweep's period (an eighth of
 * it) also showed the sweep. The corridor is the call's code, not its timers.
 */
const COMMAND_TIMEOUT_MS = 60_000;

/** A margin for timers earlier calls left; the sweeps of calls in flight stop with their last call. */
const QUIET_MS = 600;

/** Called by the application's methods once they hold their lock: where a measure cuts the call. */
let atMethod: (() => void) | undefined;

@Injectable()
class Draws {
  @Locked('draw:{0}')
  async run(id: string): Promise<string> {
    atMethod?.();
    return id;
  }

  @Locked('hold:{0}')
  async hold(id: string, until: Promise<void>): Promise<string> {
    atMethod?.();
    await until;
    return id;
  }

  @Locked('renewed:{0}', { leaseMs: 3_000 })
  async renewed(id: string, until: Promise<void>): Promise<string> {
    atMethod?.();
    await until;
    return id;
  }
}

/** An application with one LockModule, and the events its engine emits. */
export class App {
  private constructor(
    readonly context: INestApplicationContext,
    private readonly listeners: Set<(event: LockEvent) => void>,
  ) {}

  static async start(url: string, otel: boolean): Promise<App> {
    const listeners = new Set<(event: LockEvent) => void>();
    @Module({
      imports: [
        LockModule.forRoot({
          redis: url,
          keyPrefix: `acquire-path:${process.pid}:${otel ? 'otel' : 'plain'}:`,
          commandTimeoutMs: COMMAND_TIMEOUT_MS,
          onEvent: (event) => listeners.forEach((l) => l(event)),
          ...(otel ? {} : { metrics: false, traces: false }),
        }),
      ],
      providers: [Draws],
    })
    class AppModule {}
    return new App(await NestFactory.createApplicationContext(AppModule, { logger: false }), listeners);
  }

  get draws(): Draws {
    return this.context.get(Draws);
  }

  /** Resolves at the next event of `type` on `key`. */
  event(type: LockEvent['type'], key: string): Promise<void> {
    return new Promise((done) => {
      const listener = (event: LockEvent): void => {
        if (event.type !== type || event.key !== key) return;
        this.listeners.delete(listener);
        done();
      };
      this.listeners.add(listener);
    });
  }

  /** Every module loaded, the scripts cached, the connection up, grants made. */
  async warm(): Promise<void> {
    for (let i = 0; i < 50; i++) await this.draws.run(`warm-${i}`);
  }
}

/** Waits a little, so that no timer an earlier call left runs in the next measure. */
export function quiet(): Promise<void> {
  return new Promise((done) => setTimeout(done, QUIET_MS));
}

/** The coverage of one uncontended call, cut where the method starts. */
export async function uncontended(
  app: App,
  coverage: Coverage,
  id: string,
): Promise<{ grant: ScriptCoverage[]; release: ScriptCoverage[] }> {
  let grant: ScriptCoverage[] = [];
  coverage.take();
  atMethod = () => (grant = coverage.take());
  await app.draws.run(id);
  atMethod = undefined;
  return { grant, release: coverage.take() };
}

/** A second caller waits while the first holds `id`, then gets it; a first contention on `warm` before. */
export async function contended(app: App, coverage: Coverage, id: string): Promise<ScriptCoverage[]> {
  const contend = async (name: string): Promise<void> => {
    let open!: () => void;
    const until = new Promise<void>((done) => (open = done));
    const held = app.event('acquired', `hold:${name}`);
    const first = app.draws.hold(name, until);
    await held;
    const waiting = app.event('waiting', `hold:${name}`);
    const second = app.draws.hold(name, Promise.resolve());
    await waiting;
    open();
    await Promise.all([first, second]);
  };
  await contend(`warm-${id}`);
  await quiet();
  coverage.take();
  await contend(id);
  return coverage.take();
}

/**
 * From the moment the sweeps the grant started have stopped until the watchdog's first renewal
 * of the lease (a third of it in) is done; one renewal on `warm-<id>` before.
 */
export async function renewal(app: App, coverage: Coverage, id: string): Promise<ScriptCoverage[]> {
  const renew = async (name: string): Promise<ScriptCoverage[]> => {
    let open!: () => void;
    const until = new Promise<void>((done) => (open = done));
    const renewed = app.event('renewed', `renewed:${name}`);
    const held = new Promise<void>((done) => (atMethod = done));
    const call = app.draws.renewed(name, until);
    await held;
    atMethod = undefined;
    await quiet();
    coverage.take();
    await renewed;
    await nextTurn();
    const taken = coverage.take();
    open();
    await call;
    return taken;
  };
  await renew(`warm-${id}`);
  return renew(id);
}

function nextTurn(): Promise<void> {
  return new Promise((done) => setImmediate(done));
}
