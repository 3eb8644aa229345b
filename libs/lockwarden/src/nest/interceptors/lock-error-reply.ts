import type { LoggerService } from '@nestjs/common';
import {
  LockAbortedError,
  LockBackendError,
  LockConfigError,
  LockInterruptedError,
  LockLostError,
  LockTimeoutError,
} from '../../errors';
import type { LockError } from '../../errors';
import { tellRefusal } from '../../errors/refusal-notice';

/**
 * What a microservice caller or a WebSocket client receives for a lock error: the error of
 * the `RpcException` or `WsException` the handler's lock error became.
 */
export interface LockErrorReply {
  readonly status: 'error';
  /**
   * `LOCK_BUSY` (retry later), `LOCK_LOST` (the lock was lost and the work stopped: retry),
   * `LOCK_LOST_AFTER_WORK` (the work ran to its end, but its lock was lost meanwhile: check its
   * effects, do not simply retry), `LOCK_UNAVAILABLE` (Redis unreachable or refusing, or the app
   * shutting down: a wait cut short, or work that stopped when its signal asked it to) or `LOCK_ERROR`.
   */
  readonly code: 'LOCK_BUSY' | 'LOCK_LOST' | 'LOCK_LOST_AFTER_WORK' | 'LOCK_UNAVAILABLE' | 'LOCK_ERROR';
  readonly message: string;
  /** With LOCK_BUSY: when to try again, in ms, as a route's Retry-After says in seconds. */
  readonly retryAfterMs?: number;
}

/** Redis unreachable or refusing, or the app stopping: the same answer, whichever stood in the way. */
const UNAVAILABLE: LockErrorReply = {
  status: 'error',
  code: 'LOCK_UNAVAILABLE',
  message: 'Locking is unavailable right now. Retry later.',
};

/**
 * What a lock error tells the caller, in every context (an HTTP status is chosen from the
 * code): a code it can act on, a message that names no key and no Redis detail (those are for
 * logs), and, when busy, when to try again. Logs what the operator must see: a warning when
 * Redis or shutdown stood in the way, an error for a misconfiguration or an unexpected error.
 *
 * | error | code |
 * | --- | --- |
 * | LockTimeoutError | LOCK_BUSY, with `retryAfterMs` |
 * | LockLostError, the work stopped | LOCK_LOST |
 * | LockLostError, the work ran to its end (`workCompleted`) | LOCK_LOST_AFTER_WORK (no retry advice) |
 * | LockBackendError, LockAbortedError | LOCK_UNAVAILABLE (the message is logged as a warning; a refusal, once per cause) |
 * | LockInterruptedError (the work stopped as its signal asked: shutdown, or the client gone) | LOCK_UNAVAILABLE (logged at log level) |
 * | LockConfigError, any other lock error | LOCK_ERROR (the message is logged as an error) |
 *
 * @example
 * ```ts
 * const reply = lockErrorReply(new LockTimeoutError('order:1', 0), logger, 1_000);
 * // { status: 'error', code: 'LOCK_BUSY', message: 'The resource is busy ...', retryAfterMs: 1000 }
 * ```
 */
export function lockErrorReply(err: LockError, logger: LoggerService, retryAfterMs: number): LockErrorReply {
  if (err instanceof LockTimeoutError) {
    return {
      status: 'error',
      code: 'LOCK_BUSY',
      message: 'The resource is busy with other requests. Retry later.',
      retryAfterMs,
    };
  }
  if (err instanceof LockLostError && err.workCompleted) {
    // The work's effects happened: advising a retry would have a client pay twice. The engine
    // logged it at ERROR with the key already.
    return {
      status: 'error',
      code: 'LOCK_LOST_AFTER_WORK',
      message:
        'The work ran, but the lock protecting it was lost before it ended: another request may have run at the ' +
        'same time. Check the outcome before sending it again.',
    };
  }
  if (err instanceof LockLostError) {
    return {
      status: 'error',
      code: 'LOCK_LOST',
      message: 'The lock protecting this request was lost before the work finished. Retry.',
    };
  }
  if (err instanceof LockBackendError || err instanceof LockAbortedError) {
    // A refusal (an ACL, OOM) answers every request alike: said once, with its fix, not per request.
    if (!tellRefusal(logger, err)) logger.warn?.(err.message);
    return UNAVAILABLE;
  }
  if (err instanceof LockInterruptedError) {
    // The work did what the signal asked: the app is stopping or nobody waits for the answer.
    // Expected, so not an error; a client still there is told to come back.
    logger.log(err.message);
    return UNAVAILABLE;
  }
  logger.error(err instanceof LockConfigError ? err.message : `Unexpected lock error: ${err.message}`);
  return { status: 'error', code: 'LOCK_ERROR', message: 'Internal server error' };
}
