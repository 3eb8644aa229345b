import { SCRIPTS } from '../redis/lua-script';
import { inspectLock } from '../mutex/redis-inspect';
import { escapeGlob, mutexKeys, semKeys } from '../backend/lock-keys';
import type { RedisConnection } from '../redis/connection';
import type { LockSurvey, QueuedWaiterInfo, SurveyOptions, SurveyedLock } from '../backend/lock-survey';
import { inspectSemaphore } from '../semaphore/redis-sem-inspect';
import { surveyLeaderships } from '../leader/leader-survey';

const SCAN_COUNT = 1000;
const MIN_SCAN_COUNT = 100;
const QUEUE_HEAD = 10;

/** The kinds of key a survey reports, by their suffix after the `{name}` hash tag. */
const KEY_TYPES: Record<string, 'mutex' | 'rw' | 'sem' | 'leader'> = {
  '': 'mutex',
  ':rw': 'rw',
  ':sem:limit': 'sem',
  ':sem:holders': 'sem',
  ':term': 'leader',
};
const NAME = /^\{(.*)\}(|:rw|:sem:limit|:sem:holders|:term)$/s;

/**
 * Looks at the locks under `prefix` the way the CLI does, with a bounded cost: SCAN (never
 * KEYS) on every master, stopping after `scanBudget` keys or once `limit` names of each
 * kind are found, then one read-only script per name found. Cost to Redis per survey: about
 * `scanBudget / 1000` SCAN calls (each walks ~1000 keys) plus one short script per name
 * shown, and one DBSIZE per master.
 *
 * @example
 * ```ts
 * const page = await surveyLocks(client, 'lock:', { limit: 50 });
 * for (const lock of page.locks) console.log(lock.key, lock.holders[0]?.instanceId);
 * ```
 */
export async function surveyLocks(
  client: RedisConnection,
  prefix: string,
  options: SurveyOptions = {},
): Promise<LockSurvey> {
  const at = Date.now();
  const limit = options.limit ?? 100;
  const budget = options.scanBudget ?? 10_000;
  const masters = client.servers();
  let [node, cursor] = parseCursor(options.cursor, masters.length);
  const found = { mutex: new Set<string>(), rw: new Set<string>(), sem: new Set<string>(), leader: new Set<string>() };
  const room = (): number => limit - Math.max(...Object.values(found).map((names) => names.size));
  let scanned = 0;
  const match = `${escapeGlob(prefix)}{*`;
  while (node < masters.length && scanned < budget && room() > 0) {
    // A page ends where a SCAN call ends, so every name of a call is kept (the next page
    // starts after it); asking for fewer keys as the page fills keeps it near the cap.
    const count = Math.min(SCAN_COUNT, Math.max(MIN_SCAN_COUNT, room()));
    const [next, keys] = await masters[node].scan(cursor, match, count);
    scanned += count;
    for (const key of keys) {
      const m = NAME.exec(key.slice(prefix.length));
      const kind = m ? KEY_TYPES[m[2]] : undefined;
      if (m && kind) found[kind].add(m[1]);
    }
    if (next === '0') [node, cursor] = [node + 1, '0'];
    else cursor = next;
  }
  const [locks, semaphores, leaderships, sizes] = await Promise.all([
    surveyMutexes(client, prefix, found.mutex, found.rw),
    Promise.all([...found.sem].sort().map((name) => inspectSemaphore(client, semKeys(prefix, name), name))),
    surveyLeaderships(client, prefix, [...found.leader].sort()),
    Promise.all(masters.map((m) => m.dbsize())),
  ]);
  const keys = sizes.reduce((a, b) => a + b, 0);
  const done = node >= masters.length;
  return {
    at,
    locks,
    semaphores,
    leaderships,
    // SCAN's COUNT is a hint of keys walked per call: a whole walk from the start saw them all.
    scanned: done && options.cursor === undefined ? keys : Math.min(scanned, keys),
    keys,
    cursor: done ? null : `${node}:${cursor}`,
  };
}

/** Held mutexes and read/write locks, each with its queue head; free ones are left out. */
async function surveyMutexes(
  client: RedisConnection,
  prefix: string,
  mutexes: Set<string>,
  rws: Set<string>,
): Promise<SurveyedLock[]> {
  const names = [...new Set([...mutexes, ...rws])].sort();
  const infos = await Promise.all(
    names.map(async (name): Promise<SurveyedLock> => {
      const keys = mutexKeys(prefix, name);
      const [info, reply] = await Promise.all([
        inspectLock(client, prefix, name),
        SCRIPTS.queueInspect.run(client, [keys.queue, keys.waiters], [QUEUE_HEAD]) as Promise<(string | number)[]>,
      ]);
      const queue: QueuedWaiterInfo[] = [];
      for (let i = 1; i + 1 < reply.length; i += 2) {
        queue.push({ instanceId: String(reply[i]), waitedMs: Number(reply[i + 1]) });
      }
      return { ...info, queue };
    }),
  );
  return infos.filter((info) => info.held || info.queue.length > 0);
}

/** "node:cursor" as numbers checked against the masters there are; a bad one starts over. */
function parseCursor(text: string | undefined, masters: number): [number, string] {
  const m = text === undefined ? null : /^(\d+):(\d+)$/.exec(text);
  if (!m || Number(m[1]) >= masters) return [0, '0'];
  return [Number(m[1]), m[2]];
}
