import { SCRIPTS } from '../redis/lua-script';
import type { TermKeys } from '../backend/lock-keys';
import type { RedisClient } from '../backend/lock-backend';
import type { ChannelListener } from '../backend/wake-bus';

/**
 * One term of a leadership: who led, with which fencing token, since when (Redis server
 * time, never a client clock).
 *
 * @example
 * ```ts
 * const term = await locks.leadership('billing-sweeper').leader();
 * if (term) console.log(`${term.instanceId} leads since ${term.since.toISOString()} (token ${term.fencingToken})`);
 * ```
 */
export interface LeaderTerm {
  /** The leader's `instanceId` (by default `hostname:pid`). */
  readonly instanceId: string;
  /** The term's fencing token: it rises with every term; hand it to what the leader writes. */
  readonly fencingToken: number;
  /** When the term began, by the Redis server's clock. */
  readonly since: Date;
}

/** One record of the term log, in fencing-token order. */
export type TermEntry =
  | { readonly id: string; readonly type: 'elected'; readonly term: LeaderTerm }
  | { readonly id: string; readonly type: 'resigned'; readonly fencingToken: number };

/** The latest term as recorded, and whether its leader has resigned it since. */
export interface RecordedTerm {
  readonly term: LeaderTerm;
  readonly resigned: boolean;
}

/** Where a leadership's terms are recorded and announced. */
export interface TermLog {
  /** Records a new term; null when a newer one is already recorded (ours is stale). */
  elect(instanceId: string, fencingToken: number): Promise<LeaderTerm | null>;
  /** Records that the term `fencingToken` was resigned; false when it is no longer the latest. */
  resign(fencingToken: number): Promise<boolean>;
  /** The latest recorded term, if any. */
  current(): Promise<RecordedTerm | null>;
  /** Up to `count` entries after `cursor` (an entry id, or '0-0' for the start). */
  after(cursor: string, count: number): Promise<TermEntry[]>;
  /** The id of the last entry, or '0-0'. */
  lastId(): Promise<string>;
  /** Calls `wake` on every announcement (and after a reconnect); resolves, with the unsubscribe, once listening. */
  listen(wake: () => void): Promise<() => void>;
}

/** How many entries the log keeps: an observer further behind than this misses the oldest. */
const LOG_LENGTH = 1000;

/** The term log on Redis: a hash for the latest term, a stream for the history, pub/sub to announce. */
export class RedisTermLog implements TermLog {
  private readonly publish: string;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: TermKeys,
    private readonly bus: ChannelListener,
  ) {
    this.publish = client.isCluster ? 'spublish' : 'publish';
  }

  async elect(instanceId: string, fencingToken: number): Promise<LeaderTerm | null> {
    const { term, log, channel } = this.keys;
    const since = Number(
      await SCRIPTS.leaderElect.run(
        this.client,
        [term, log, channel],
        [instanceId, String(fencingToken), this.publish, LOG_LENGTH],
      ),
    );
    return since < 0 ? null : { instanceId, fencingToken, since: new Date(since) };
  }

  async resign(fencingToken: number): Promise<boolean> {
    const { term, log, channel } = this.keys;
    const done = await SCRIPTS.leaderResign.run(
      this.client,
      [term, log, channel],
      [String(fencingToken), this.publish, LOG_LENGTH],
    );
    return Number(done) === 1;
  }

  async current(): Promise<RecordedTerm | null> {
    const fields = await this.client.hgetall(this.keys.term);
    if (!fields.fencingToken) return null;
    return {
      term: {
        instanceId: fields.instanceId,
        fencingToken: Number(fields.fencingToken),
        since: new Date(Number(fields.since)),
      },
      resigned: fields.state !== 'leading',
    };
  }

  async after(cursor: string, count: number): Promise<TermEntry[]> {
    const rows = await this.client.xrange(this.keys.log, nextId(cursor), '+', 'COUNT', count);
    return rows.map(([id, fields]) => toEntry(id, fields));
  }

  async lastId(): Promise<string> {
    const rows = await this.client.xrevrange(this.keys.log, '+', '-', 'COUNT', 1);
    return rows[0]?.[0] ?? '0-0';
  }

  listen(wake: () => void): Promise<() => void> {
    return this.bus.listen(this.keys.channel, wake);
  }
}

/** The smallest stream id after `id`: XRANGE's exclusive start, without needing Redis 6.2. */
export function nextId(id: string): string {
  const [ms, seq] = id.split('-');
  return `${ms}-${Number(seq) + 1}`;
}

function toEntry(id: string, fields: string[]): TermEntry {
  const get = (name: string): string | undefined => {
    for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
    return undefined;
  };
  const fencingToken = Number(id.split('-')[0]);
  if (get('type') === 'resigned') return { id, type: 'resigned', fencingToken };
  return {
    id,
    type: 'elected',
    term: { instanceId: get('instanceId') ?? '', fencingToken, since: new Date(Number(get('since'))) },
  };
}

/**
 * The term log of an engine without Redis (LockTestingModule): the same records, kept in
 * this process, and `since` from this process's clock, there being no server to ask.
 */
export class MemoryTermLog implements TermLog {
  private entries: TermEntry[] = [];
  private latest: { term: LeaderTerm; resigned: boolean } | undefined;
  private readonly wakers = new Set<() => void>();

  async elect(instanceId: string, fencingToken: number): Promise<LeaderTerm | null> {
    if (this.latest && this.latest.term.fencingToken >= fencingToken) return null;
    const term = { instanceId, fencingToken, since: new Date() };
    this.latest = { term, resigned: false };
    this.append({ id: `${fencingToken}-0`, type: 'elected', term });
    return term;
  }

  async resign(fencingToken: number): Promise<boolean> {
    if (!this.latest || this.latest.term.fencingToken !== fencingToken || this.latest.resigned) return false;
    this.latest.resigned = true;
    this.append({ id: `${fencingToken}-1`, type: 'resigned', fencingToken });
    return true;
  }

  async current(): Promise<RecordedTerm | null> {
    return this.latest ? { ...this.latest } : null;
  }

  async after(cursor: string, count: number): Promise<TermEntry[]> {
    return this.entries.filter((e) => compareIds(e.id, cursor) > 0).slice(0, count);
  }

  async lastId(): Promise<string> {
    return this.entries.at(-1)?.id ?? '0-0';
  }

  async listen(wake: () => void): Promise<() => void> {
    this.wakers.add(wake);
    return () => this.wakers.delete(wake);
  }

  private append(entry: TermEntry): void {
    this.entries.push(entry);
    if (this.entries.length > LOG_LENGTH) this.entries.shift();
    for (const wake of this.wakers) wake();
  }
}

function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number);
  const [bm, bs] = b.split('-').map(Number);
  return am - bm || as - bs;
}
