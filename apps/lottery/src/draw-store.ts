import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { LUA_SOURCES } from './scripts/lua-sources.generated';

/** A recorded draw. */
export interface DrawResult {
  readonly drawId: string;
  readonly winners: string[];
  readonly instanceId: string;
  readonly fencingToken: number;
  readonly drawnAt: string;
}

export type RecordOutcome = 'claimed' | 'recorded' | 'stale' | 'duplicate';

export const USERS_KEY = 'lottery:users';
/** Draws claimed but not yet recorded: a crashed drawer leaves its draw here for catch-up. */
export const PENDING_KEY = 'lottery:pending';
const SOURCE = LUA_SOURCES['record-draw'];
const SHA = createHash('sha1').update(SOURCE).digest('hex');

/** The Redis keys of one draw; they share a hash tag, so the script runs on Cluster too. */
export function drawKeys(drawId: string): [result: string, fence: string] {
  return [`lottery:{draw:${drawId}}`, `lottery:{draw:${drawId}}:fence`];
}

/** Claims a draw for a fencing token (as the draw starts) or records its result, once and fenced. */
export async function fencedWrite(
  data: Redis,
  drawId: string,
  fencingToken: number,
  mode: 'claim' | 'record',
  result?: DrawResult,
): Promise<RecordOutcome> {
  const args = [...drawKeys(drawId), String(fencingToken), mode, result ? JSON.stringify(result) : ''];
  try {
    return (await data.evalsha(SHA, 2, ...args)) as RecordOutcome;
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    return (await data.eval(SOURCE, 2, ...args)) as RecordOutcome;
  }
}

export async function readDraw(data: Redis, drawId: string): Promise<DrawResult | undefined> {
  const raw = await data.get(drawKeys(drawId)[0]);
  return raw ? (JSON.parse(raw) as DrawResult) : undefined;
}

/** Seeds the eligible users once; instances starting together add the same members, harmlessly. */
export async function seedUsers(data: Redis, count: number): Promise<number> {
  if ((await data.scard(USERS_KEY)) === 0) {
    const users = Array.from({ length: count }, (_, i) => `user-${String(i + 1).padStart(5, '0')}`);
    for (let i = 0; i < users.length; i += 1000) await data.sadd(USERS_KEY, ...users.slice(i, i + 1000));
  }
  return data.scard(USERS_KEY);
}
