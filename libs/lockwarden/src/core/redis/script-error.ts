import { createHash } from 'node:crypto';
import { RedisRefusalError, refusalOf, scriptPlace } from '../../errors/redis-reason';
import type { Refusal } from '../../errors/redis-reason';
import type { ScriptSource } from './connection';
import { LUA_SOURCES } from './lua-sources.generated';

// What a script Redis refused names. Redis 7 says only "can't run this command or subcommand
// script: <sha>, on @user_script:64.": which command is on that line of our own source. Every
// client adapter's run() passes its failures through here.

/** Lockwarden's scripts by SHA-1, as the server names them: made at the first refusal of one. */
let scriptsBySha: Map<string, { name: string; source: string }> | undefined;

function ourScript(sha: string): { name: string; source: string } | undefined {
  scriptsBySha ??= new Map(
    Object.entries(LUA_SOURCES).map(([name, source]) => [
      createHash('sha1').update(source).digest('hex'),
      { name, source },
    ]),
  );
  return scriptsBySha.get(sha);
}

/** The command a call begins with: a literal, an ARGV, or a local that holds one (release-one.lua's `publish`). */
const CALL = /redis\.p?call\(\s*(?:'([\w|]+)'|"([\w|]+)"|ARGV\[(\d+)\]|([A-Za-z_]\w*))/g;

/** The commands the calls on one line of a script send, as ACL rules name them. */
function commandsOn(line: string, args: readonly (string | number)[]): string[] {
  const found = new Set<string>();
  for (const m of line.matchAll(CALL)) {
    const literal = m[1] ?? m[2];
    const fromArgs = m[3] === undefined ? undefined : args[Number(m[3]) - 1];
    if (literal !== undefined) found.add(literal.toLowerCase());
    else if (typeof fromArgs === 'string') found.add(fromArgs.toLowerCase());
    else if (m[4] !== undefined) {
      // A command held by a local: our scripts take the publish command (PUBLISH, or SPUBLISH on a
      // Cluster) as an argument and pass it on under a name of their own.
      const publish = args.find((a) => a === 'publish' || a === 'spublish');
      if (typeof publish === 'string') found.add(publish);
    }
  }
  return [...found];
}

/**
 * `err`, a failure of `script` run with `args`, as the library tells it: a refusal from inside
 * one of Lockwarden's scripts becomes a RedisRefusalError naming the script and, where the
 * server did not, the command its line sends; any other failure is returned as it is.
 */
export function scriptError(err: unknown, script: ScriptSource, args: readonly (string | number)[]): unknown {
  if (err instanceof RedisRefusalError) return err;
  const refusal = refusalOf(err);
  const message = err instanceof Error ? err.message : String(err);
  const place = refusal && scriptPlace(message);
  if (!refusal || !place) return err;
  const sha = place.sha ?? script.sha;
  const ours = ourScript(sha);
  const source = sha === script.sha ? script.source : ours?.source;
  const named: Refusal = { ...refusal, ...(ours ? { script: ours.name } : {}) };
  const unnamed = named.command === undefined && (named.kind === 'command' || named.kind === 'unknown-command');
  if (!unnamed || source === undefined) return new RedisRefusalError(named, err);
  const commands = commandsOn(source.split('\n')[place.line - 1] ?? '', args);
  if (commands.length === 1) return new RedisRefusalError({ ...named, command: commands[0] }, err);
  if (commands.length === 0) return new RedisRefusalError(named, err);
  const among = commands.map((c) => c.toUpperCase()).join(', ');
  return new RedisRefusalError({ ...named, said: `${named.said} (one of ${among})` }, err);
}

/** A `catch` that throws what scriptError makes of the failure. */
export function scriptFailure(script: ScriptSource, args: readonly (string | number)[]): (err: unknown) => never {
  return (err) => {
    throw scriptError(err, script, args);
  };
}
