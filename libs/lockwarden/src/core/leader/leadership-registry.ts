import { LockConfigError } from '../../errors';
import type { LeadershipHost } from './leadership-host';
import { checkLeadershipName } from './leadership-options';
import type { LockBackend } from '../backend/lock-backend';
import { Leadership } from './leadership';
import { termKeys } from '../backend/lock-keys';
import { memoryTermLogs } from './term-log';
import type { TermLog, TermLogs } from './term-log';

/**
 * The leaderships of one engine: one `Leadership` per name, and the one subscriber
 * connection their observers share. `LockModule` provides one (behind
 * `LockService.leadership()`) and closes it on shutdown; without Nest, make one per engine
 * and close it before the engine.
 *
 * @example
 * ```ts
 * const engine = new LockEngine({ redis: 'redis://127.0.0.1:6379' });
 * const leaderships = new LeadershipRegistry(engine);
 * await leaderships.leadership('sweeper').campaign();
 * // ...
 * await leaderships.close(); // resigns, then closes the subscriber
 * await engine.close();
 * ```
 */
export class LeadershipRegistry {
  private readonly byName = new Map<string, Leadership>();
  private logs: TermLogs | undefined;
  private readonly closing = new AbortController();
  private closed: Promise<void> | undefined;

  /**
   * @param backend the backend `engine` was made with, when it is not Redis: registries of
   *   engines sharing one in-memory backend then share their term logs too, as instances
   *   sharing one Redis do.
   */
  constructor(
    private readonly engine: LeadershipHost,
    private readonly backend?: LockBackend,
  ) {}

  /**
   * The leadership of `name` (one per name: every call returns the same object). Rejects a
   * name that is not a non-empty string, or too long a key, with `LockConfigError`.
   *
   * @example
   * ```ts
   * const reports = leaderships.leadership('reports');
   * ```
   */
  leadership(name: string): Leadership {
    const found = this.byName.get(name);
    if (found) return found;
    const key = checkLeadershipName(name, 'leadership()');
    if (this.closed) throw new LockConfigError(`Leadership ${JSON.stringify(key)} was asked for after shutdown.`, key);
    const leadership = new Leadership(name, {
      engine: this.engine,
      log: this.termLog(key),
      watch: {
        logger: this.engine.options.logger,
        idleRecheckMs: this.engine.options.leaseMs,
        closed: this.closing.signal,
      },
    });
    this.byName.set(name, leadership);
    return leadership;
  }

  /**
   * Resigns every leadership it gave out (see `Leadership.resign()`), ends every
   * `changes()` iteration and closes the subscriber connection. Idempotent.
   *
   * @example
   * ```ts
   * await leaderships.close();
   * ```
   */
  close(): Promise<void> {
    this.closed ??= this.shutdown();
    return this.closed;
  }

  private async shutdown(): Promise<void> {
    await Promise.all([...this.byName.values()].map((l) => l.resign()));
    this.closing.abort(new Error('the leadership registry closed'));
    await this.logs?.close();
  }

  private termLog(key: string): TermLog {
    // Without a backend that keeps terms (in memory), registries of one backend share theirs.
    this.logs ??= this.engine.openTermLogs() ?? memoryTermLogs(this.backend ?? this);
    return this.logs.log(termKeys(this.engine.options.keyPrefix, key));
  }
}
