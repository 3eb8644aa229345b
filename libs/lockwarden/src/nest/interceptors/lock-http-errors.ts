import { ConflictException, InternalServerErrorException, ServiceUnavailableException } from '@nestjs/common';
import type { ArgumentsHost, LoggerService } from '@nestjs/common';
import { LockError } from '../../errors';
import { DEFAULT_RETRY_AFTER_MS } from '../retry-after';
import { lockErrorReply } from './lock-error-reply';

interface HeaderTarget {
  header?: (name: string, value: string) => unknown;
  setHeader?: (name: string, value: string) => unknown;
  headersSent?: boolean;
  sent?: boolean;
}

/**
 * Maps a lock error to the HTTP answer a client can act on; anything else, or
 * any non-HTTP context, passes through unchanged. Messages stay generic: lock
 * keys and Redis details are for logs, not clients.
 *
 * | error | status |
 * | --- | --- |
 * | LockTimeoutError | 409, with Retry-After (`retryAfterMs`, default 1 s, in whole seconds) |
 * | LockLostError | 409 (the work ran to its end: no Retry-After, and a message that says so) |
 * | LockBackendError, LockAbortedError | 503, with the same Retry-After |
 * | LockConfigError, any other lock error | 500 (the message is logged) |
 *
 * A 409 or 503 body is Nest's (`statusCode`, `error`, `message`) with the reply's `code`
 * (`LOCK_BUSY`, `LOCK_LOST`, `LOCK_LOST_AFTER_WORK`, `LOCK_UNAVAILABLE`).
 *
 * Which error is which, and what is logged, is lockErrorReply's.
 */
export function toHttpError(
  err: unknown,
  host: ArgumentsHost,
  logger: LoggerService,
  retryAfterMs = DEFAULT_RETRY_AFTER_MS,
): unknown {
  if (host.getType() !== 'http' || !(err instanceof LockError)) return err;
  const reply = lockErrorReply(err, logger, retryAfterMs);
  // Nest's usual body, with the code: a client tells "busy, retry" from "the work ran, check it"
  // by the code, not by reading the message.
  const body = (statusCode: number, error: string) => ({ statusCode, error, message: reply.message, code: reply.code });
  switch (reply.code) {
    case 'LOCK_BUSY':
      retryAfter(host, retryAfterMs);
      return new ConflictException(body(409, 'Conflict'));
    case 'LOCK_LOST':
    case 'LOCK_LOST_AFTER_WORK':
      return new ConflictException(body(409, 'Conflict'));
    case 'LOCK_UNAVAILABLE':
      // Redis unreachable, or this instance shutting down: worth trying again, as HTTP lets a
      // 503 say when (a load balancer's retry then finds another instance, or Redis back).
      retryAfter(host, retryAfterMs);
      return new ServiceUnavailableException(body(503, 'Service Unavailable'));
    default:
      return new InternalServerErrorException();
  }
}

/** Retry-After in whole seconds, at least 1. */
function retryAfter(host: ArgumentsHost, ms: number): void {
  setHeader(host.switchToHttp().getResponse<HeaderTarget>(), 'Retry-After', String(Math.max(1, Math.ceil(ms / 1_000))));
}

function setHeader(res: HeaderTarget, name: string, value: string): void {
  if (res.headersSent || res.sent) return;
  if (typeof res.header === 'function') res.header(name, value);
  else if (typeof res.setHeader === 'function') res.setHeader(name, value);
}
