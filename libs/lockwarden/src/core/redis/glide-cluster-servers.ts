import { CommandServer } from './command-server';
import type { ServerConnection } from './connection';

/** Where one cluster primary listens, as `CLUSTER NODES` gives it. */
export interface GlidePrimary {
  host: string;
  port: number;
}

/** How often, at most, the list of primaries is asked for again while it is in use. */
const REFRESH_AFTER_MS = 5_000;
/** How long to wait before asking again when the cluster did not answer. */
const RETRY_MS = 1_000;

/**
 * The primaries that serve slots, from `CLUSTER NODES` (one line per node:
 * `id host:port@bus flags master ping pong epoch link slot…`): flagged master, not failed,
 * with an address, and holding at least one slot.
 */
export function parsePrimaries(reply: unknown): GlidePrimary[] {
  const out: GlidePrimary[] = [];
  for (const line of String(reply).split('\n')) {
    const fields = line.trim().split(' ');
    if (fields.length < 9) continue;
    const flags = fields[2].split(',');
    if (!flags.includes('master') || flags.some((f) => f === 'fail' || f === 'noaddr' || f === 'handshake')) continue;
    const address = fields[1].split('@')[0];
    const colon = address.lastIndexOf(':');
    const port = Number(address.slice(colon + 1));
    if (colon <= 0 || !Number.isInteger(port) || port <= 0) continue;
    out.push({ host: address.slice(0, colon), port });
  }
  return out.sort((a, b) => a.host.localeCompare(b.host) || a.port - b.port);
}

function sameList(a: readonly GlidePrimary[], b: readonly GlidePrimary[]): boolean {
  return a.length === b.length && a.every((p, i) => p.host === b[i].host && p.port === b[i].port);
}

/**
 * The primaries behind a GLIDE cluster client. GLIDE keeps its slot map to itself, so
 * Lockwarden asks the cluster (`CLUSTER NODES`) when the connection is made, again when the
 * list is in use and older than 5 s, and every second until a first answer comes; `changed`
 * runs whenever the list changes (the first answer included), so scripts are loaded and the
 * server's commands looked up on a primary that is new.
 */
export class GlideClusterServers {
  private primaries: GlidePrimary[] | undefined;
  private fetchedAt = 0;
  private fetching = false;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly first: { promise: Promise<void>; resolve: () => void };

  constructor(
    private readonly ask: (args: string[], to: GlidePrimary | 'any') => Promise<unknown>,
    private readonly changed: () => void,
  ) {
    let resolve = (): void => undefined;
    const promise = new Promise<void>((r) => (resolve = r));
    this.first = { promise, resolve };
    this.refresh();
  }

  /** Resolves once the cluster first said which primaries it has. */
  whenKnown(): Promise<void> {
    return this.first.promise;
  }

  /** Whether the list of primaries is known yet. */
  get known(): boolean {
    return this.primaries !== undefined;
  }

  /** One server per primary, each reached by its address. */
  list(): ServerConnection[] {
    if (Date.now() - this.fetchedAt > REFRESH_AFTER_MS) this.refresh();
    return (this.primaries ?? []).map(
      (p) =>
        new CommandServer(
          `${p.host}:${p.port}`,
          () => (this.closed ? 'closed' : 'ready'),
          (args) => this.ask(args, p),
        ),
    );
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
  }

  private refresh(): void {
    if (this.fetching || this.closed) return;
    this.fetching = true;
    this.ask(['CLUSTER', 'NODES'], 'any')
      .then((reply) => {
        const found = parsePrimaries(reply);
        this.fetchedAt = Date.now();
        if (this.closed || (this.primaries && sameList(this.primaries, found))) return;
        this.primaries = found;
        this.first.resolve();
        this.changed();
      })
      .catch(() => {
        // No answer yet: the first list is worth waiting for; a later one is asked for on use.
        if (this.primaries || this.closed) return;
        this.retry = setTimeout(() => this.refresh(), RETRY_MS);
        this.retry.unref();
      })
      .finally(() => (this.fetching = false));
  }
}
