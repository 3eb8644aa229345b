import type { ConnectionOutage } from '../backend/lock-backend';

/** Read at most this often: each read is a native call (a few µs), and every acquire asks at its start. */
const READ_EVERY_MS = 50;

const NO_CONNECTION = 'no connection open; no GLIDE client of this process has one';

/**
 * What can be known of a GLIDE client's outages. GLIDE reconnects by itself and tells nothing:
 * no events, no state, and a command sent while the server is down waits for its
 * `requestTimeout`, then fails with a TimeoutError a slow server gives too. Its statistics
 * (`getStatistics()`) count the connections open, for every GLIDE client of the process
 * together. So one thing is sure: when that count is 0, this client has none either, and
 * its server cannot be reached. While any other GLIDE client of the process is connected, an
 * outage of this one goes unseen, and an acquire is bounded as when Redis does not answer.
 * The outage counts from the first read that found no connection, after one was seen.
 */
export class GlideOutage {
  private connectedOnce = false;
  private since: number | undefined;
  private readAt = -Infinity;

  constructor(
    private readonly client: object,
    private readonly server: () => string,
  ) {
    this.read(performance.now());
  }

  current(): ConnectionOutage | undefined {
    const now = performance.now();
    if (now - this.readAt >= READ_EVERY_MS) this.read(now);
    if (this.since === undefined) return undefined;
    return { since: this.since, error: new Error(NO_CONNECTION), server: this.server() };
  }

  private read(now: number): void {
    this.readAt = now;
    const open = openConnections(this.client);
    if (open === undefined) return;
    if (open > 0) {
      this.connectedOnce = true;
      this.since = undefined;
    } else if (this.connectedOnce) {
      // Never connected: a client made with lazyConnect, which connects at its first command.
      this.since ??= now;
    }
  }
}

/** GLIDE's count of open connections, process-wide; undefined where this GLIDE has no such statistic. */
function openConnections(client: object): number | undefined {
  try {
    const stats = (client as { getStatistics?: () => unknown }).getStatistics?.();
    const count = Number((stats as { total_connections?: unknown } | undefined)?.total_connections);
    return Number.isInteger(count) && count >= 0 ? count : undefined;
  } catch {
    // A statistic that cannot be read tells nothing; the acquire's own bounds still hold.
    return undefined;
  }
}
