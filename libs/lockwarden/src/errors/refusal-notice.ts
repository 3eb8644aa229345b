import { refusalOf, refusalText } from './redis-reason';
import type { Refusal } from './redis-reason';

// A refusal (redis-reason.ts) is said at WARN once per cause and logger, where it is met: the
// first acquire, renewal or tick it stops. Every later call meets the same answer; its caller
// hears it in its error, and the log is not filled with it.

/** The causes each logger was told of already. */
const TOLD = new WeakMap<object, Set<string>>();

/** One cause per missing permission (a command, keys, channels) or, for the rest, per place and words. */
function causeOf(r: Refusal): string {
  if (r.kind === 'command' && r.command !== undefined) return `command:${r.command}`;
  if (r.kind === 'key' || r.kind === 'channel' || r.kind === 'memory') return r.kind;
  return `${r.kind}:${r.script ?? ''}:${r.line ?? ''}:${r.said}`;
}

/**
 * Whether `err` is a refusal, or carries one as its cause. The first time `logger` meets that
 * cause it also says it at WARN, with what fixes it; later meetings say nothing.
 */
export function tellRefusal(logger: { warn?(message: string): unknown }, err: unknown): boolean {
  const refusal = refusalOf(err);
  if (!refusal) return false;
  let told = TOLD.get(logger);
  if (!told) TOLD.set(logger, (told = new Set()));
  const cause = causeOf(refusal);
  if (told.has(cause)) return true;
  told.add(cause);
  logger.warn?.(
    `${refusalText(refusal)}. Until that is fixed, what needs it fails at once with LockBackendError ` +
      '(a route answers 503), not as a busy lock; said once.',
  );
  return true;
}
