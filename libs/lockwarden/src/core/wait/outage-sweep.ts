import { LockBackendError } from '../../errors';
import { redisReasonShort } from '../../errors/redis-reason';
import type { ConnectionOutage, OpenedBackend } from '../backend/lock-backend';

/** What waits on Redis and fails when it is known unreachable: a waiting acquire's gate, a tick's claim. */
export interface OutageWatcher {
  /** The lock's key, and what was being done, for the error: "acquire". */
  readonly key: string;
  readonly action: string;
  fail(err: LockBackendError): void;
}

/**
 * Fails what waits on a Redis known to be unreachable, once the outage has lasted
 * `commandTimeoutMs`, instead of at the end of its wait budget: a call cannot get through,
 * and the caller hears it while it can still do something about it. One timer for every
 * watcher, every quarter of that budget, only while any watches: a watcher fails between 1
 * and 1.25 times it into the outage. A call started once the outage has lasted that long
 * fails at once (`failsNow`). A Redis that answers, however slowly, is no outage: the
 * bounds of each call stay what they are.
 */
export class OutageSweep {
  private readonly watching = new Set<OutageWatcher>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly backend: Pick<OpenedBackend, 'outage'>,
    private readonly commandTimeoutMs: number,
  ) {}

  /** The outage going on, if one is known. */
  current(): ConnectionOutage | undefined {
    try {
      return this.backend.outage?.();
    } catch {
      // Not knowing is no outage: what waits keeps its own bounds (and a timer asking must not throw).
      return undefined;
    }
  }

  /** The error a call on `key` started now fails with, when the outage has lasted commandTimeoutMs already. */
  failsNow(key: string, action: string): LockBackendError | undefined {
    const outage = this.current();
    if (!outage) return undefined;
    const now = performance.now();
    return now - outage.since >= this.commandTimeoutMs ? unreachable(key, action, outage, now) : undefined;
  }

  /** The connection error of an outage going on: the cause for a call that got no answer in its time. */
  cause(): Error | undefined {
    return this.current()?.error;
  }

  watch(watcher: OutageWatcher): void {
    this.watching.add(watcher);
    this.sweeper ??= setInterval(this.sweep, Math.max(10, this.commandTimeoutMs / 4)).unref();
  }

  unwatch(watcher: OutageWatcher): void {
    this.watching.delete(watcher);
    // No timer outlives the calls it watches.
    if (this.watching.size > 0) return;
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /**
   * `call()`'s answer, unless Redis is known unreachable: it then fails at once, or once the
   * outage has lasted commandTimeoutMs. An answer that comes after that goes to `late`, so the
   * caller can undo what the call did.
   */
  bound<T>(key: string, action: string, call: () => Promise<T>, late: (value: T) => void): Promise<T> {
    const now = this.failsNow(key, action);
    if (now) return afterTurn(now);
    const work = call();
    return new Promise<T>((resolve, reject) => {
      let failed = false;
      const watcher: OutageWatcher = {
        key,
        action,
        fail: (err) => {
          failed = true;
          reject(err);
        },
      };
      this.watch(watcher);
      work.then(
        (value) => {
          this.unwatch(watcher);
          if (failed) late(value);
          else resolve(value);
        },
        (err: unknown) => {
          this.unwatch(watcher);
          if (!failed) reject(err);
        },
      );
    });
  }

  private readonly sweep = (): void => {
    if (this.watching.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
      return;
    }
    const outage = this.current();
    const now = performance.now();
    if (!outage || now - outage.since < this.commandTimeoutMs) return;
    for (const watcher of [...this.watching]) {
      this.watching.delete(watcher);
      watcher.fail(unreachable(watcher.key, watcher.action, outage, now));
    }
  };
}

/**
 * `err`, one turn of the event loop later. A call that fails at once fails without I/O, in
 * promise callbacks alone: a caller that tries again at once, in a loop, would then never
 * let the event loop turn, and so never let the connection come back.
 */
export function afterTurn(err: Error): Promise<never> {
  return new Promise<never>((_resolve, reject) => setImmediate(() => reject(err)));
}

/** Why a call failed on a Redis known to be unreachable: what, why, and for how long now. */
class Unreachable extends Error {
  constructor(outage: ConnectionOutage, now: number) {
    const ms = Math.max(0, Math.round(now - outage.since));
    super(`${outage.server} is unreachable (${redisReasonShort(outage.error)}), and has been for ${ms} ms`, {
      cause: outage.error,
    });
    this.name = 'RedisUnreachable';
  }
}

function unreachable(key: string, action: string, outage: ConnectionOutage, now: number): LockBackendError {
  return new LockBackendError(key, action, new Unreachable(outage, now));
}
