import { LockConfigError } from '../../errors';
import { megabytes } from '../backend/server-eviction';
import type { EvictingServer, ServerEviction } from '../backend/server-eviction';

/** Fails an acquire before it writes anything; resolves (or returns nothing) when it may go on. */
export type AdmitAcquire = (key: string) => Promise<void> | void;

/**
 * With `onEvictingServer: 'refuse'`, what fails every acquire while a server may evict lock
 * keys; undefined otherwise, so the default costs an acquire nothing. Before the servers were
 * first looked at, an acquire waits for that look, at most `commandTimeoutMs`: an acquire
 * that goes on after it is one Redis did not answer in time, which it will fail on anyway.
 */
export function evictionGate(
  eviction: ServerEviction | undefined,
  mode: 'warn' | 'refuse',
  commandTimeoutMs: number,
): AdmitAcquire | undefined {
  if (mode !== 'refuse' || !eviction) return undefined;
  return (key) => {
    const known = eviction.evicting();
    if (known === undefined) return;
    if (known !== 'pending') throw refused(key, known);
    return eviction.checked(commandTimeoutMs).then(() => {
      const found = eviction.evicting();
      if (found !== undefined && found !== 'pending') throw refused(key, found);
    });
  };
}

function refused(key: string, server: EvictingServer): LockConfigError {
  return new LockConfigError(
    `Refused to lock "${key}": ${server.server} may evict lock keys (maxmemory-policy ${server.policy}, ` +
      `maxmemory ${megabytes(server.maxmemory)}), and onEvictingServer is 'refuse'. Set maxmemory-policy ` +
      'noeviction there, or give the locks a Redis of their own.',
    key,
  );
}
