import { quoteKey } from '../../errors/key-text';
import { redisReason, refusalOf } from '../../errors/redis-reason';
import type { LockStore } from '../backend/lock-store';
import type { LockLogger } from '../observe/logger';
import type { Attempt } from './attempts';

// The way out of a wait that did not get its lock: what an attempt may have left on the
// server (a place in the queue, a grant whose answer came too late) is taken back.

/** Undoes a server-side place, or a grant that landed as the caller gave up. */
function withdrawOnce(store: LockStore, attempt: Attempt): Promise<unknown> {
  switch (attempt.kind) {
    case 'mutex':
      return store.release(attempt.ask.keys, attempt.ownerToken);
    case 'read':
    case 'write':
      return store.rwRelease(attempt.ask.keys, attempt.ownerToken, attempt.kind);
    case 'permit':
      return store.semRelease(attempt.ask.keys, attempt.ownerToken);
  }
}

/** What a withdrawal needs of the engine: its store, whether it stops, and where to say it gave up. */
export interface WithdrawContext {
  readonly store: LockStore;
  readonly stopping: AbortSignal;
  readonly logger: LockLogger;
}

/**
 * Withdraws an attempt, waiting for it until `settleBy` at most; after that it goes on in
 * the background, tried again while Redis fails, until it is done or `giveUpAt` (when what
 * it would withdraw has lapsed anyway). A withdrawal is sent on the attempt's connection
 * after it, so Redis runs it after the attempt however late either gets there.
 */
export async function withdraw(
  ctx: WithdrawContext,
  attempt: Attempt,
  settleBy: number,
  giveUpAt: number,
): Promise<void> {
  const done = withdrawUntilAnswered(ctx, attempt, giveUpAt);
  const wait = settleBy - performance.now();
  if (wait <= 0) return;
  let timer: NodeJS.Timeout | undefined;
  // Node fires a longer delay at once (a budget this long is a wait without end).
  const ms = Math.min(wait, 2 ** 31 - 1);
  await Promise.race([done, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

async function withdrawUntilAnswered(ctx: WithdrawContext, attempt: Attempt, giveUpAt: number): Promise<void> {
  for (let pause = 100; ; pause = Math.min(pause * 2, 2_000)) {
    try {
      await withdrawOnce(ctx.store, attempt);
      return;
    } catch (err) {
      // A refusal (redis-reason.ts) answers every try alike: the acquire's own error says it.
      if (refusalOf(err) || ctx.stopping.aborted || performance.now() + pause >= giveUpAt) {
        // Said of an acquire that got nothing: it is no lock to give back, only an attempt that
        // may have reached Redis (a queued place, or a grant whose answer was lost).
        ctx.logger.debug(
          `An acquire of ${quoteKey(attempt.key)} that did not get the lock could not be cleaned up after ` +
            `(${redisReason(err)}); whatever it may have left in Redis expires by itself.`,
        );
        return;
      }
      await new Promise<void>((resolve) => setTimeout(resolve, pause).unref());
    }
  }
}
