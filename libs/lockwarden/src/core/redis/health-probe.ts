import { failureCategory, redisReason } from '../../errors/redis-reason';
import { afterReads } from './after-reads';
import type { ConnectionFailure } from '../../errors/redis-reason';
import { downErrorOf } from './connection-watch';
import type { RedisConnection, ServerConnection } from './connection';
import { SCRIPTS } from './lua-script';
import type { ServerProbe } from '../backend/lock-info';

const SHAS = [...new Set(Object.values(SCRIPTS).map((s) => s.sha))];

/**
 * Pings every server (each Cluster master) and asks whether the scripts are
 * cached. Reachable when at least `needed` servers answer (all, unless given).
 */
export async function probeServers(
  clients: readonly RedisConnection[],
  timeoutMs: number,
  needed?: number,
): Promise<ServerProbe> {
  const started = performance.now();
  // A client still learning its servers (a GLIDE cluster client) is given the same budget to name them.
  const named = await settled(Promise.all(clients.map((c) => c.serversKnown?.())), timeoutMs);
  const left = Math.max(1, timeoutMs - (performance.now() - started));
  // The connection watch knows why a connection is down per client, not per Cluster node.
  const servers = clients.flatMap((c) =>
    c.servers().map((server) => ({ server, downError: () => (c.cluster ? undefined : downErrorOf(c)) })),
  );
  const results = await Promise.all(servers.map((s) => probeOne(s.server, s.downError, timeoutMs, left)));
  const up = results.filter((r) => r.ok);
  const failed: Probe | undefined =
    servers.length > 0
      ? results.find((r) => !r.ok)
      : named
        ? down(new Error('None of startup nodes is available'))
        : {
            ok: false,
            pingMs: 0,
            scripts: false,
            error: `the cluster did not say which primaries it has within ${timeoutMs} ms`,
            failure: 'no-answer',
          };
  return {
    reachable: up.length > 0 && up.length >= (needed ?? servers.length),
    pingMs: up.length === 0 ? 0 : Math.max(...up.map((r) => r.pingMs)),
    servers: servers.length,
    serversUp: up.length,
    scriptsLoaded: up.length === servers.length && up.every((r) => r.scripts),
    ...(failed ? { error: failed.error, ...(failed.failure ? { failure: failed.failure } : {}) } : {}),
  };
}

interface Probe {
  ok: boolean;
  pingMs: number;
  scripts: boolean;
  error?: string;
  failure?: ConnectionFailure;
}

const NO_ANSWER = Symbol('no answer');

async function probeOne(
  server: ServerConnection,
  downError: () => Error | undefined,
  timeoutMs: number,
  /** What is left of `timeoutMs` once the servers were named. */
  leftMs: number,
): Promise<Probe> {
  // Between reconnection attempts a PING would only wait in the client's queue for the whole
  // timeout, and then read as "no answer" although the server turned the connection away.
  const state = server.state();
  if (state === 'reconnecting' || state === 'closed') {
    return down(downError() ?? new Error('Connection is closed.'));
  }
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      afterReads(() => reject(NO_ANSWER)),
      leftMs,
    );
  });
  // Both calls go out at once: after a stall of this process, both answers are read before
  // the deadline is called (afterReads). A script check sent after the PING's answer would
  // meet a deadline that passed during the stall.
  const ping = server.ping();
  const scripts = server.scriptExists(SHAS);
  scripts.catch(() => undefined); // a PING that failed says why; this one's failure is the same
  try {
    await Promise.race([ping, timeout]);
    const pingMs = performance.now() - started;
    const cached = await Promise.race([scripts, timeout]);
    return { ok: true, pingMs: Math.round(pingMs * 100) / 100, scripts: cached.every((n) => n === 1) };
  } catch (err) {
    if (err !== NO_ANSWER) return down(err);
    // Still connecting when time ran out: what the last attempt met says more than the silence.
    const known = server.state() === 'ready' ? undefined : downError();
    if (known) return down(known);
    return { ok: false, pingMs: 0, scripts: false, error: `no answer within ${timeoutMs} ms`, failure: 'no-answer' };
  } finally {
    clearTimeout(timer);
  }
}

/** Whether `promise` settled within `ms` (a rejection counts as settled: the probe then finds what it finds). */
async function settled(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>(
    (resolve) =>
      (timer = setTimeout(
        afterReads(() => resolve(false)),
        ms,
      )),
  );
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function down(err: unknown): Probe {
  const failure = failureCategory(err);
  return { ok: false, pingMs: 0, scripts: false, error: redisReason(err), ...(failure ? { failure } : {}) };
}
