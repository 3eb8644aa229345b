import type { AcquireOptions, LockEngine, LockEngineOptions, LockHandle } from 'lockwarden/core';
import { EventLog } from './event-log';
import { uniquePrefix } from './redis';

type MakeEngine = (options?: Partial<LockEngineOptions>, events?: EventLog) => LockEngine;

/**
 * Locks handed off between two engines, made by `engine` (an engineFactory's, which closes
 * them): the hand-off and what the new holder's watchdog does with its short hand-off lease.
 */
export function handOffs(engine: MakeEngine) {
  /** Two engines on one prefix, the second with events and `engineOptions`. */
  function twoEngines(
    name: string,
    engineOptions: Partial<LockEngineOptions> = {},
  ): { keyPrefix: string; events: EventLog; a: LockEngine; b: LockEngine } {
    const keyPrefix = uniquePrefix(name);
    const events = new EventLog();
    return {
      keyPrefix,
      events,
      a: engine({ ...engineOptions, keyPrefix }),
      b: engine({ ...engineOptions, keyPrefix }, events),
    };
  }

  /**
   * A mutex `key` held in one engine and waited for in the other (with `options`), then released:
   * the handed-off lock, once the waiter has it. `beforeRelease` runs with the waiter parked.
   */
  async function handOff(
    name: string,
    key: string,
    options: AcquireOptions,
    engineOptions: Partial<LockEngineOptions> = {},
    beforeRelease: () => Promise<unknown> = async () => undefined,
  ): Promise<{ keyPrefix: string; events: EventLog; lock: LockHandle }> {
    const { keyPrefix, events, a, b } = twoEngines(name, engineOptions);
    const holder = await a.acquire(key);
    const parked = events.next({ type: 'waiting', key });
    const waiting = b.acquire(key, options);
    await parked;
    await beforeRelease();
    await holder.release();
    const lock = await waiting;
    expect(events.count({ type: 'acquired', key, handedOff: true })).toBe(1);
    return { keyPrefix, events, lock };
  }

  return { twoEngines, handOff };
}
