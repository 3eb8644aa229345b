import { SCRIPTS } from '../redis/lua-script';
import { semaphoreInfo } from '../backend/lock-info';
import type { SemaphoreInfo } from '../backend/lock-info';
import type { SemKeys } from '../backend/lock-keys';
import type { RedisConnection } from '../redis/connection';

/** Reads one semaphore's state in one script call. */
export async function inspectSemaphore(client: RedisConnection, keys: SemKeys, key: string): Promise<SemaphoreInfo> {
  const reply = (await SCRIPTS.semInspect.run(client, [keys.lock, keys.permits, keys.limit, keys.fence], [])) as (
    string | number
  )[];
  return semaphoreInfo(key, reply);
}
