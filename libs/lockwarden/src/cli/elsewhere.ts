import type { Redis } from 'ioredis';
import { escapeGlob } from '../core';

/** What the CLI looked for: a lock (mutex or read/write) or a semaphore. */
export type NameKind = 'lock' | 'semaphore';

/**
 * The key that shows a name is in use under a prefix: a held mutex (`{name}`) or
 * read/write lock (`{name}:rw`), or the limit a semaphore keeps (`{name}:sem:limit`).
 */
const MARKS: Record<NameKind, readonly string[]> = { lock: ['', ':rw'], semaphore: [':sem:limit'] };

/** SCAN calls of 1 000 keys each: a look at most about 100 000 keys deep, so a big keyspace costs little. */
const MAX_SCANS = 100;
const MAX_PREFIXES = 5;

/**
 * Prefixes other than `prefix` under which `name` is in use, found with a capped SCAN
 * (never KEYS). An empty answer means none was found within the cap.
 */
export async function otherPrefixes(
  redis: Redis,
  prefix: string,
  name: string,
  kind: NameKind,
  maxScans = MAX_SCANS,
): Promise<string[]> {
  const tag = `{${name}}`;
  const found = new Set<string>();
  let cursor = '0';
  let scans = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `*${escapeGlob(tag)}*`, 'COUNT', 1_000);
    cursor = next;
    scans++;
    for (const key of keys) {
      for (const mark of MARKS[kind]) {
        const end = tag + mark;
        if (!key.endsWith(end)) continue;
        const other = key.slice(0, key.length - end.length);
        if (other !== prefix) found.add(other);
      }
    }
  } while (cursor !== '0' && scans < maxScans && found.size < MAX_PREFIXES);
  return [...found].sort();
}

/** The line that tells someone who gave the wrong `--prefix` (or none) where the name is. */
export function elsewhereNote(name: string, kind: NameKind, prefix: string, others: readonly string[]): string {
  const what = kind === 'lock' ? `lock "${name}" is held` : `semaphore "${name}" exists`;
  const where = others.map((p) => JSON.stringify(p)).join(', ');
  const plural = others.length > 1 ? 'prefixes' : 'prefix';
  return (
    `Note: nothing under the prefix ${JSON.stringify(prefix)}, but ${what} under the ${plural} ${where}. ` +
    `Pass the keyPrefix your application uses: --prefix ${JSON.stringify(others[0])}\n`
  );
}
