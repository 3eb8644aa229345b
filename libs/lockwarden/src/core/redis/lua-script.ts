import { createHash } from 'node:crypto';
import { LUA_SOURCES, type LuaScriptName } from './lua-sources.generated';
import type { RedisConnection, ScriptSource } from './connection';

/**
 * One named Lua operation. Runs by EVALSHA and falls back to EVAL once per
 * connection that has not seen it (after a restart or on a new cluster node),
 * which loads it into that server's script cache (RedisConnection.run).
 */
export class LuaScript implements ScriptSource {
  readonly sha: string;

  constructor(
    readonly name: LuaScriptName,
    readonly source: string = LUA_SOURCES[name],
  ) {
    this.sha = createHash('sha1').update(this.source).digest('hex');
  }

  run(connection: RedisConnection, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return connection.run(this, keys, args);
  }
}

/** Every script, created (and hashed) once per process. */
export const SCRIPTS = {
  acquire: new LuaScript('acquire'),
  release: new LuaScript('release'),
  releasePlain: new LuaScript('release-plain'),
  handOffHere: new LuaScript('hand-off-here'),
  renew: new LuaScript('renew'),
  fenceRaise: new LuaScript('fence-raise'),
  fenceMint: new LuaScript('fence-mint'),
  inspect: new LuaScript('inspect'),
  forceUnlock: new LuaScript('force-unlock'),
  rwAcquire: new LuaScript('rw-acquire'),
  rwRelease: new LuaScript('rw-release'),
  leaderElect: new LuaScript('leader-elect'),
  leaderResign: new LuaScript('leader-resign'),
  semAcquire: new LuaScript('sem-acquire'),
  semRelease: new LuaScript('sem-release'),
  semLimit: new LuaScript('sem-limit'),
  semInspect: new LuaScript('sem-inspect'),
  queueInspect: new LuaScript('queue-inspect'),
  tickClaim: new LuaScript('tick-claim'),
  tickStart: new LuaScript('tick-start'),
  tickSettle: new LuaScript('tick-settle'),
  tickAdopt: new LuaScript('tick-adopt'),
  // Loaded with the others at each connect, so the check that follows it (acl-probe.ts) finds it.
  aclProbe: new LuaScript('acl-probe'),
} as const;

/**
 * Loads every script into each master's cache (SCRIPT LOAD), so that health
 * checks can report them loaded and the first lock needs no EVAL fallback.
 * Run again after each reconnect: a restarted server has an empty cache.
 */
export async function loadScripts(connection: RedisConnection): Promise<void> {
  const sources = [...new Set(Object.values(SCRIPTS).map((s) => s.source))];
  await Promise.all(connection.servers().flatMap((server) => sources.map((source) => server.scriptLoad(source))));
}
