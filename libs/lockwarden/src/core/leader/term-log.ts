import type { TermKeys } from '../backend/lock-keys';
import type { LeaderTerm, RecordedTerm, TermEntry, TermLog, TermLogs } from '../backend/term-log';
import { TERM_LOG_LENGTH } from '../backend/term-log';

export type { LeaderTerm, RecordedTerm, TermEntry, TermLog, TermLogs } from '../backend/term-log';

/** The in-memory term logs, by the scope that shares them (a backend, or one registry). */
const MEMORY_LOGS = new WeakMap<object, Map<string, MemoryTermLog>>();

/** The term logs kept in this process for `scope`: every registry of the same scope shares them. */
export function memoryTermLogs(scope: object): TermLogs {
  let logs = MEMORY_LOGS.get(scope);
  if (!logs) MEMORY_LOGS.set(scope, (logs = new Map()));
  const byName = logs;
  return {
    log: (keys: TermKeys) => {
      let log = byName.get(keys.term);
      if (!log) byName.set(keys.term, (log = new MemoryTermLog()));
      return log;
    },
    close: async () => undefined,
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
    if (this.entries.length > TERM_LOG_LENGTH) this.entries.shift();
    for (const wake of this.wakers) wake();
  }
}

function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number);
  const [bm, bs] = b.split('-').map(Number);
  return am - bm || as - bs;
}
