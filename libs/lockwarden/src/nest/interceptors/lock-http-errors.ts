import { ConflictException, InternalServerErrorException, ServiceUnavailableException } from '@nestjs/common';
import type { ArgumentsHost, LoggerService } from '@nestjs/common';
import { LockError } from '../../errors';
import { DEFAULT_RETRY_AFTER_MS, lockErrorReply } from './lock-error-reply';

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
 * | LockLostError | 409 |
 * | LockBackendError, LockAbortedError | 503 |
 * | LockConfigError, any other lock error | 500 (the message is logged) |
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
  switch (reply.code) {
    case 'LOCK_BUSY': {
      const seconds = Math.max(1, Math.ceil(retryAfterMs / 1_000));
      setHeader(host.switchToHttp().getResponse<HeaderTarget>(), 'Retry-After', String(seconds));
      return new ConflictException(reply.message);
    }
    case 'LOCK_LOST':
      return new ConflictException(reply.message);
    case 'LOCK_UNAVAILABLE':
      return new ServiceUnavailableException(reply.message);
    default:
      return new InternalServerErrorException();
  }
}

function setHeader(res: HeaderTarget, name: string, value: string): void {
  if (res.headersSent || res.sent) return;
  if (typeof res.header === 'function') res.header(name, value);
  else if (typeof res.setHeader === 'function') res.setHeader(name, value);
}
