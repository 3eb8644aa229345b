import { Redis } from 'ioredis';
import { connectionOf, forceUnlockKey, inspectLock, semKeys, inspectSemaphore, checkKey } from '../core';
import type { LockInfo } from '../core';
import { parseArgs, UsageError, USAGE } from './args';
import type { CliArgs } from './args';
import { scanLockNames } from './scan';
import { elsewhereNote, otherPrefixes } from './elsewhere';
import type { NameKind } from './elsewhere';
import { renderSemaphore, renderTable } from './table';

/** Exit codes a script can rely on (see USAGE). */
export const EXIT = { ok: 0, negative: 1, usage: 2, redis: 3, internal: 4 } as const;

export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
}

/** Runs one command line; resolves the exit code. Never calls process.exit itself. */
export async function runCli(argv: readonly string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  let args: CliArgs;
  try {
    args = parseArgs(argv, env);
    if (args.help || !args.command) {
      io.out(USAGE);
      return args.help ? EXIT.ok : EXIT.usage;
    }
    checkCommand(args);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.err(`${err.message}\n\n${USAGE}`);
    return EXIT.usage;
  }
  const redis = new Redis(args.redis!, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 5_000 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await dispatch(args, redis, io);
  } catch (err) {
    io.err(`Redis at ${redact(args.redis!)} failed: ${err instanceof Error ? err.message : String(err)}\n`);
    return EXIT.redis;
  } finally {
    redis.disconnect();
  }
}

function checkCommand(args: CliArgs): void {
  if (!args.redis) throw new UsageError('Say which Redis: --redis redis://host:6379, or set REDIS_URL.');
  const needsKey = args.command === 'inspect' || args.command === 'unlock' || args.command === 'semaphore';
  if (!['list', 'inspect', 'semaphore', 'unlock', 'watch'].includes(args.command!)) {
    throw new UsageError(`Unknown command "${args.command}".`);
  }
  if (needsKey && args.positional.length !== 1) {
    throw new UsageError(
      `${args.command} needs exactly one ${args.command === 'semaphore' ? 'semaphore' : 'lock'} key.`,
    );
  }
  if (needsKey) {
    try {
      checkKey(args.positional[0]);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  if (args.command === 'unlock' && !args.force) {
    throw new UsageError(
      'unlock deletes a lock whoever holds it; the holder keeps running until its next renewal. Add --force to do it.',
    );
  }
}

async function dispatch(args: CliArgs, redis: Redis, io: Io): Promise<number> {
  switch (args.command) {
    case 'inspect': {
      const info = await inspectLock(connectionOf(redis), args.prefix, args.positional[0]);
      io.out(args.json ? `${JSON.stringify(info)}\n` : renderTable([info]));
      if (!info.held) await noteElsewhere(redis, args, 'lock', io);
      return info.held ? EXIT.ok : EXIT.negative;
    }
    case 'semaphore': {
      const key = args.positional[0];
      const info = await inspectSemaphore(connectionOf(redis), semKeys(args.prefix, key), key);
      io.out(args.json ? `${JSON.stringify(info)}\n` : renderSemaphore(info));
      // A stored limit says the prefix is right, even with no permit held now.
      if (info.limit === null) await noteElsewhere(redis, args, 'semaphore', io);
      return info.holders.length > 0 ? EXIT.ok : EXIT.negative;
    }
    case 'unlock': {
      const removed = await forceUnlockKey(connectionOf(redis), args.prefix, args.positional[0]);
      io.out(
        args.json
          ? `${JSON.stringify({ key: args.positional[0], removed })}\n`
          : removed
            ? `Removed lock "${args.positional[0]}". Its holder finds out at its next renewal.\n`
            : `Lock "${args.positional[0]}" was not held.\n`,
      );
      if (!removed) await noteElsewhere(redis, args, 'lock', io);
      return removed ? EXIT.ok : EXIT.negative;
    }
    case 'list':
      io.out(format(args, await listLocks(redis, args)));
      return EXIT.ok;
    default:
      return watch(args, redis, io);
  }
}

/**
 * Found nothing under the given prefix: if the name is in use under another one, say so on
 * stderr (the answer and exit code stay the same), since the usual cause is a `--prefix`
 * that is not the application's `keyPrefix`.
 */
async function noteElsewhere(redis: Redis, args: CliArgs, kind: NameKind, io: Io): Promise<void> {
  const name = args.positional[0];
  const others = await otherPrefixes(redis, args.prefix, name, kind);
  if (others.length > 0) io.err(elsewhereNote(name, kind, args.prefix, others));
}

async function listLocks(redis: Redis, args: CliArgs): Promise<LockInfo[]> {
  const names = await scanLockNames(redis, args.prefix, args.positional[0] ?? '*');
  return Promise.all(names.map((name) => inspectLock(connectionOf(redis), args.prefix, name)));
}

function format(args: CliArgs, infos: LockInfo[]): string {
  return args.json ? `${JSON.stringify(infos)}\n` : renderTable(infos);
}

async function watch(args: CliArgs, redis: Redis, io: Io): Promise<number> {
  let stopped = false;
  const stop = (): void => {
    stopped = true;
  };
  process.once('SIGINT', stop);
  try {
    for (let n = 1; !stopped; n++) {
      const infos = await listLocks(redis, args);
      // A person gets a screen redrawn in place; a script gets one JSON document per line.
      io.out(args.json ? format(args, infos) : `\x1b[2J\x1b[H${new Date().toISOString()}\n${renderTable(infos)}`);
      if (args.count !== undefined && n >= args.count) break;
      await new Promise((resolve) => setTimeout(resolve, args.intervalMs));
    }
  } finally {
    process.off('SIGINT', stop);
  }
  return EXIT.ok;
}

/** A URL without its password, for messages. */
function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
