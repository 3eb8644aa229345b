import { failureCategory, RedisCallDroppedError, redisReasonShort, saysOnlyDown } from '../../errors/redis-reason';
import type { ConnectionOutage } from '../backend/lock-backend';
import type { LockLogger } from '../observe/logger';
import type { RedisConnection } from './connection';

const watches = new WeakMap<RedisConnection, ConnectionWatch>();

/** While Redis stays down, one debug line per this many ms at most (the client retries twice a second). */
const DEBUG_EVERY_MS = 30_000;

/**
 * Follows one connection Lockwarden opened and says what an operator needs to know: once
 * when Redis cannot be reached (at startup, or after a connection was lost), and once when
 * it is back. The client reports every failed reconnection, several a second while Redis is
 * down. Those go to debug only.
 */
export class ConnectionWatch {
  private down = false;
  /** When the outage began: the first error while not ready. */
  private downSince = 0;
  private lastError: Error | undefined;
  /** Failed reconnections not yet told at debug, and when one last was. */
  private quiet = 0;
  private toldAt = -Infinity;
  readonly server: string;

  constructor(
    private readonly client: RedisConnection,
    private readonly logger: LockLogger,
  ) {
    this.server = client.describe();
    client.on('error', this.onError);
    client.on('ready', this.onReady);
    watches.set(client, this);
  }

  /** The error that says why the connection is down, while it is. Undefined while it works. */
  get downError(): Error | undefined {
    return this.down ? this.lastError : undefined;
  }

  /** Since when, and why, the connection is down, while it is (refused at startup included). */
  get outage(): ConnectionOutage | undefined {
    if (!this.down || !this.lastError) return undefined;
    return { since: this.downSince, error: this.lastError, server: this.server };
  }

  detach(): void {
    this.client.off('error', this.onError);
    this.client.off('ready', this.onReady);
    watches.delete(this.client);
  }

  private readonly onError = (err: Error): void => {
    this.debugThrottled(err);
    // An error on a working connection (a reset the client recovers from at once) is no outage.
    // The failed reconnections after it, if Redis is really gone, are.
    if (this.client.state() === 'ready') return;
    this.lastError = err;
    if (this.down) return;
    this.down = true;
    this.downSince = performance.now();
    const verb = failureCategory(err) === undefined ? 'cannot be used' : 'cannot be reached';
    this.logger.warn(
      `${this.server} ${verb} (${redisReasonShort(err)}): locks cannot be taken or renewed until it is back. ` +
        'Reconnecting.',
    );
  };

  /** The first error of an outage, then one line per DEBUG_EVERY_MS with how many came between. */
  private debugThrottled(err: Error): void {
    const now = performance.now();
    if (this.down && now - this.toldAt < DEBUG_EVERY_MS) {
      this.quiet++;
      return;
    }
    const more = this.quiet > 0 ? ` (and ${this.quiet} failed reconnections before this one)` : '';
    this.quiet = 0;
    this.toldAt = now;
    this.logger.debug(`Redis connection error, ${this.server}: ${redisReasonShort(err)}${more}`);
  }

  private readonly onReady = (): void => {
    this.lastError = undefined;
    this.quiet = 0;
    this.toldAt = -Infinity;
    if (!this.down) return;
    this.down = false;
    const message = `${this.server} is reachable again.`;
    if (this.logger.log) this.logger.log(message);
    else this.logger.warn(message);
  };
}

/** The error that says why `client`'s connection is down, when Lockwarden watches it and it is. */
export function downErrorOf(client: RedisConnection): Error | undefined {
  return watches.get(client)?.downError;
}

/** Since when, and why, `client`'s connection is down, when Lockwarden watches it and it is. */
export function watchedOutageOf(client: RedisConnection): ConnectionOutage | undefined {
  return watches.get(client)?.outage;
}

/**
 * `err`, a call's failure on `client`, with why the connection is down when `err` says only
 * that it is ("the call was dropped while reconnecting") and Lockwarden watches it: an acquire
 * on a server whose certificate is not trusted then names the certificate, as the log and
 * `health()` do.
 */
export function withDownReason(err: unknown, client: RedisConnection): unknown {
  if (!saysOnlyDown(err)) return err;
  const why = watches.get(client)?.downError;
  return why ? new RedisCallDroppedError(err, why) : err;
}
