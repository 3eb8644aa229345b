/** A parsed command line: the subcommand, its positional arguments and its flags. */
export interface CliArgs {
  command: string | undefined;
  positional: string[];
  redis: string | undefined;
  prefix: string;
  json: boolean;
  force: boolean;
  intervalMs: number;
  count: number | undefined;
  help: boolean;
}

/** A mistake on the command line (exit code 2). */
export class UsageError extends Error {}

const VALUE_FLAGS = new Set(['--redis', '--prefix', '--interval', '--count']);
const BOOLEAN_FLAGS = new Set(['--json', '--force', '--help', '-h']);

export function parseArgs(argv: readonly string[], env: NodeJS.ProcessEnv): CliArgs {
  const values = new Map<string, string>();
  const flags = new Set<string>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [name, inline] = arg.startsWith('--') && arg.includes('=') ? arg.split(/=(.*)/s, 2) : [arg, undefined];
    if (VALUE_FLAGS.has(name)) {
      const value = inline ?? argv[++i];
      if (value === undefined) throw new UsageError(`${name} needs a value.`);
      values.set(name, value);
    } else if (BOOLEAN_FLAGS.has(name)) {
      flags.add(name);
    } else if (arg.startsWith('-')) {
      throw new UsageError(`Unknown option ${arg}.`);
    } else {
      positional.push(arg);
    }
  }
  return {
    command: positional.shift(),
    positional,
    redis: values.get('--redis') ?? env.REDIS_URL,
    prefix: values.get('--prefix') ?? 'lock:',
    json: flags.has('--json'),
    force: flags.has('--force'),
    intervalMs: positiveInteger('--interval', values.get('--interval') ?? '1000'),
    count: values.has('--count') ? positiveInteger('--count', values.get('--count')!) : undefined,
    help: flags.has('--help') || flags.has('-h'),
  };
}

function positiveInteger(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${name} must be a positive integer, got "${text}".`);
  return n;
}

export const USAGE = `Usage: lockwarden <command> [options]

Commands:
  list [pattern]        Locks whose name matches the glob pattern (default *), one line each
  inspect <key>         One lock: kind, holders, lease left, fencing token, waiters
  semaphore <key>       One semaphore: permits in use of the limit, each holder's permits and
                        lease left, the last fencing token
  unlock <key> --force  Delete a lock whoever holds it (dangerous: the holder runs on until
                        its next renewal, possibly beside the next holder)
  watch [pattern]       The list, refreshed every --interval ms until Ctrl-C (or --count times)

Options:
  --redis <url>     Redis to inspect (default: $REDIS_URL)
  --prefix <text>   The keyPrefix the application uses (default: lock:). When inspect,
                    semaphore or unlock find nothing under it but the name is in use under
                    another prefix, a note on stderr names that prefix
  --json            Machine-readable output
  --interval <ms>   Refresh period of watch (default: 1000)
  --count <n>       Stop watch after n refreshes
  -h, --help        This help

Exit codes:
  0  done (list, watch; inspect: the lock is held; semaphore: a permit is held;
     unlock: a lock was removed)
  1  inspect: the lock is free; semaphore: no permit is held; unlock: there was nothing to remove
  2  usage error (unknown command or option, missing argument, unlock without --force)
  3  Redis could not be reached or failed
  4  an unexpected internal error (please report it)
`;
