import { LockEngine } from '../../libs/lockwarden/src/core/engine/lock-engine';
import type { LockEngineOptions } from '../../libs/lockwarden/src/core/engine/engine-options';
import type { EventLog } from './event-log';
import { uniquePrefix } from './redis';

/**
 * Makes lock engines for one test file and closes them all after each test.
 * `pair()` gives two engines on separate connections sharing one key prefix:
 * two "processes" in one.
 */
export function engineFactory(url: () => string, name: string) {
  const engines: LockEngine[] = [];
  const engine = (options: Partial<LockEngineOptions> = {}, events?: EventLog): LockEngine => {
    const e = new LockEngine({ redis: url(), keyPrefix: uniquePrefix(name), onEvent: events?.listener, ...options });
    engines.push(e);
    return e;
  };
  const pair = (options: Partial<LockEngineOptions> = {}, events?: EventLog): [LockEngine, LockEngine] => {
    const keyPrefix = uniquePrefix(`${name}-pair`);
    return [engine({ keyPrefix, ...options }, events), engine({ keyPrefix, ...options }, events)];
  };
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.close()));
  });
  return { engine, pair };
}
