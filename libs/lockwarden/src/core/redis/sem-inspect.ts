import { SCRIPTS } from './lua-script';
import { semaphoreInfo } from '../backend/lock-info';
import type { SemaphoreInfo } from '../backend/lock-info';
import type { SemKeys } from '../backend/lock-keys';
import type { RedisClient } from '../backend/lock-backend';

/** Reads one semaphore's state in one script call. */
export async function inspectSemaphore(client: RedisClient, keys: SemKeys, key: string): Promise<SemaphoreInfo> {
  const reply = (await SCRIPTS.semInspect.run(client, [keys.lock, keys.permits, keys.limit, keys.fence], [])) as (
    string | number
  )[];
  return semaphoreInfo(key, reply);
}
