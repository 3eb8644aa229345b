import { LockEngine } from '../../libs/lockwarden/src/core/engine/lock-engine';
import type { LockEngineOptions } from '../../libs/lockwarden/src/core/options/engine-options';
import type { EventLog } from './event-log';
import { uniquePrefix } from './redis';
import { clientMaker } from './clients';
import type { ClientKind, Where } from './clients';

/**
 * Closes an engine once its test is over, without the shutdown grace. A test may end with
 * a lock it left held or lost on purpose (the signal's abort was what it checked);
 * `close()` would give that lock's work the whole `shutdownGraceMs` (10 s by default) to
 * end, and after the test there is no work left to wait for.
 */
export async function closeNow(engine: Pick<LockEngine, 'drain' | 'close'>): Promise<void> {
  await engine.drain(0);
  await engine.close();
}

/**
 * Makes lock engines for one test file and closes them all after each test.
 * `pair()` gives two engines on separate connections sharing one key prefix:
 * two "processes" in one. `kind` says which client they are given (clients.ts).
 */
export function engineFactory(where: () => Where, name: string, kind: ClientKind = 'ioredis') {
  const engines: LockEngine[] = [];
  const clients = clientMaker(kind);
  const engine = (options: Partial<LockEngineOptions> = {}, events?: EventLog): LockEngine => {
    const topology = options.redis === undefined && options.client === undefined ? clients.topology(where()) : {};
    const e = new LockEngine({
      ...topology,
      keyPrefix: uniquePrefix(name),
      onEvent: events?.listener,
      ...options,
    });
    engines.push(e);
    return e;
  };
  const pair = (options: Partial<LockEngineOptions> = {}, events?: EventLog): [LockEngine, LockEngine] => {
    const keyPrefix = uniquePrefix(`${name}-pair`);
    return [engine({ keyPrefix, ...options }, events), engine({ keyPrefix, ...options }, events)];
  };
  afterEach(async () => {
    await Promise.all(engines.splice(0).map(closeNow));
    await clients.closeClients();
  });
  return { engine, pair, topology: clients.topology };
}
