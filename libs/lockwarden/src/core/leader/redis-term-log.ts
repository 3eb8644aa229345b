import type { LockLogger } from '../observe/logger';
import type { TermKeys } from '../backend/lock-keys';
import type { RedisConnection } from '../redis/connection';
import type { LeaderTerm, RecordedTerm, TermEntry, TermLog, TermLogs } from '../backend/term-log';
import { TERM_LOG_LENGTH } from '../backend/term-log';
import type { ChannelListener } from '../backend/wake-bus';
import { LeaderBus } from './leader-bus';
import { SCRIPTS } from '../redis/lua-script';

/** The term logs of one leadership registry on Redis, sharing one `LeaderBus` made on first use. */
export function redisTermLogs(client: RedisConnection, logger: LockLogger): TermLogs {
  let bus: LeaderBus | undefined;
  return {
    log: (keys) => new RedisTermLog(client, keys, (bus ??= new LeaderBus(client, logger))),
    close: async () => {
      await bus?.close();
    },
  };
}

/** The term log on Redis: a hash for the latest term, a stream for the history, pub/sub to announce. */
export class RedisTermLog implements TermLog {
  private readonly publish: string;

  constructor(
    private readonly client: RedisConnection,
    private readonly keys: TermKeys,
    private readonly bus: ChannelListener,
  ) {
    this.publish = client.cluster ? 'spublish' : 'publish';
  }

  async elect(instanceId: string, fencingToken: number): Promise<LeaderTerm | null> {
    const { term, log, channel } = this.keys;
    const since = Number(
      await SCRIPTS.leaderElect.run(
        this.client,
        [term, log, channel],
        [instanceId, String(fencingToken), this.publish, TERM_LOG_LENGTH],
      ),
    );
    return since < 0 ? null : { instanceId, fencingToken, since: new Date(since) };
  }

  async resign(fencingToken: number): Promise<boolean> {
    const { term, log, channel } = this.keys;
    const done = await SCRIPTS.leaderResign.run(
      this.client,
      [term, log, channel],
      [String(fencingToken), this.publish, TERM_LOG_LENGTH],
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
    const rows = await this.client.xrange(this.keys.log, nextId(cursor), '+', count);
    return rows.map(([id, fields]) => toEntry(id, fields));
  }

  async lastId(): Promise<string> {
    const rows = await this.client.xrevrange(this.keys.log, '+', '-', 1);
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
