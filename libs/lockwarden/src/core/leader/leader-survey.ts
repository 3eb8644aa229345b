import type { RedisConnection } from '../redis/connection';
import { termKeys } from '../backend/lock-keys';
import type { LeadershipInfo, SurveyedTerm } from '../backend/lock-survey';

const RECENT_TERMS = 5;
/** Stream entries read per leadership: a term usually has two (elected, resigned). */
const LOG_ENTRIES = RECENT_TERMS * 2;

/**
 * Reads each leadership's latest term, whether its lock is still held, and its recent terms
 * from the term log (a hash, a GET-like EXISTS and one XREVRANGE per name).
 */
export async function surveyLeaderships(
  client: RedisConnection,
  prefix: string,
  names: readonly string[],
): Promise<LeadershipInfo[]> {
  return Promise.all(
    names.map(async (key): Promise<LeadershipInfo> => {
      const keys = termKeys(prefix, key);
      const [fields, held, rows] = await Promise.all([
        client.hgetall(keys.term),
        client.exists(keys.lock),
        client.xrevrange(keys.log, '+', '-', LOG_ENTRIES),
      ]);
      const recent = termsFromLog(rows);
      const latestTerm = fields.fencingToken
        ? {
            instanceId: fields.instanceId ?? '',
            fencingToken: Number(fields.fencingToken),
            since: Number(fields.since),
            resigned: fields.state !== 'leading',
          }
        : null;
      return {
        key,
        latestTerm,
        leading: latestTerm !== null && fields.state === 'leading' && held === 1,
        recent,
      };
    }),
  );
}

/** Terms from log entries read newest first: an 'elected' entry opens one, 'resigned' closes it. */
function termsFromLog(rows: [string, string[]][]): SurveyedTerm[] {
  // Entry ids are "<fencing token>-0" (elected) and "<fencing token>-1" (resigned).
  const resigned = new Set<number>();
  const terms: SurveyedTerm[] = [];
  for (const [id, flat] of rows) {
    const f: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) f[flat[i]] = flat[i + 1];
    const token = Number(id.split('-')[0]);
    if (f.type === 'resigned') resigned.add(token);
    else if (terms.length < RECENT_TERMS) {
      terms.push({
        instanceId: f.instanceId ?? '',
        fencingToken: token,
        since: Number(f.since),
        resigned: resigned.has(token),
      });
    }
  }
  return terms;
}
