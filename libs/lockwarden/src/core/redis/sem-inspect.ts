import { SCRIPTS } from '../scripts/lua-script';
import type { SemKeys } from './lock-keys';
import type { RedisClient } from './redis-client';

/** One live holder of a semaphore's permits, as operators may see it: never its owner token. */
export interface PermitHolderInfo {
  /** The instance id the holder's process gave (`instanceId`, by default `hostname:pid`). */
  instanceId: string;
  /** How many permits it holds. */
  permits: number;
  /** How long its lease has left, in ms. */
  ttlMs: number;
}

/**
 * What `Semaphore.inspect()` reports: the stored limit and who holds permits now.
 *
 * @example
 * ```ts
 * const info = await locks.semaphore('payments-api', { permits: 5 }).inspect();
 * console.log(`${info.used}/${info.permits} in use, by ${info.holders.map((h) => h.instanceId).join(', ')}`);
 * ```
 */
export interface SemaphoreInfo {
  key: string;
  /**
   * The stored limit. From the CLI, null before the semaphore's first use stored one;
   * `Semaphore.inspect()` gives its own number then.
   */
  permits: number | null;
  /** Permits held by live holders (at most `permits`, unless the limit was lowered under them). */
  used: number;
  /** Permits a new grant could take now (0 while the limit is lowered under the holders). */
  available: number;
  holders: PermitHolderInfo[];
  /** The last fencing token handed out for this semaphore (0: none yet). */
  fencingToken: number;
}

/** The reply of sem-inspect.lua (and of the memory backend's twin) as a SemaphoreInfo. */
export function semaphoreInfo(key: string, reply: readonly (string | number)[]): SemaphoreInfo {
  const limit = Number(reply[0]);
  const holders: PermitHolderInfo[] = [];
  for (let i = 2; i + 2 < reply.length; i += 3) {
    holders.push({
      instanceId: String(reply[i]),
      permits: Number(reply[i + 1]),
      ttlMs: Math.max(0, Number(reply[i + 2])),
    });
  }
  const used = holders.reduce((sum, h) => sum + h.permits, 0);
  return {
    key,
    permits: limit < 0 ? null : limit,
    used,
    available: limit < 0 ? 0 : Math.max(0, limit - used),
    holders,
    fencingToken: Number(reply[1]),
  };
}

/** Reads one semaphore's state in one script call. */
export async function inspectSemaphore(client: RedisClient, keys: SemKeys, key: string): Promise<SemaphoreInfo> {
  const reply = (await SCRIPTS.semInspect.run(client, [keys.lock, keys.permits, keys.limit, keys.fence], [])) as (
    string | number
  )[];
  return semaphoreInfo(key, reply);
}
