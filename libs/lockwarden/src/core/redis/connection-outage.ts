import type { ConnectionOutage } from '../backend/lock-backend';
import type { RedisConnection } from './connection';
import { watchedOutageOf } from './connection-watch';

/**
 * Since when, and why, `client` is known to be down. Its own state says when it was lost or
 * closed (OutageClock, GlideOutage). The watch of a connection Lockwarden opened says why, and
 * knows of a connection refused before the first was made.
 */
export function connectionOutageOf(client: RedisConnection): ConnectionOutage | undefined {
  const seen = client.outage();
  const watched = watchedOutageOf(client);
  if (!watched) return seen;
  if (!seen) return watched;
  return { since: Math.min(seen.since, watched.since), error: watched.error, server: seen.server };
}

/**
 * The opened backend's `outage`: its one connection's outage. For a quorum's nodes, it is the outage
 * of as many as leave no majority to answer, counted from when the last of those went down.
 * One node down, of three, is no outage: the quorum store times it out by itself.
 */
export function connectionsOutage(clients: readonly RedisConnection[]): () => ConnectionOutage | undefined {
  if (clients.length === 1) return () => connectionOutageOf(clients[0]);
  const majority = Math.floor(clients.length / 2) + 1;
  // Down this many, the rest are fewer than a majority.
  const fatal = clients.length - majority + 1;
  return () => {
    const down: ConnectionOutage[] = [];
    for (const client of clients) {
      const outage = connectionOutageOf(client);
      if (outage) down.push(outage);
    }
    if (down.length < fatal) return undefined;
    down.sort((a, b) => a.since - b.since);
    const servers = down.map((d) => d.server).join(', ');
    return {
      since: down[fatal - 1].since,
      error: down[0].error,
      server: `a majority of the quorum's nodes (${down.length} of ${clients.length}: ${servers})`,
    };
  };
}
