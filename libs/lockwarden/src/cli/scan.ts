import type { Redis } from 'ioredis';
import { escapeGlob } from '../core';

/**
 * Lock names under `prefix` whose name matches `pattern`, found with SCAN
 * (never KEYS, which blocks Redis). A mutex lives at `<prefix>{name}` and a
 * read/write lock at `<prefix>{name}:rw`; their auxiliary keys are skipped.
 */
export async function scanLockNames(redis: Redis, prefix: string, pattern: string): Promise<string[]> {
  const names = new Set<string>();
  const head = `${escapeGlob(prefix)}{`;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${head}${pattern}}*`, 'COUNT', 500);
    cursor = next;
    for (const key of keys) {
      const body = key.slice(prefix.length);
      const m = /^\{(.*)\}(:rw)?$/s.exec(body);
      if (m) names.add(m[1]);
    }
  } while (cursor !== '0');
  return [...names].sort();
}
