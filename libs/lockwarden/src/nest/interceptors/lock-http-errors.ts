import { ConflictException, InternalServerErrorException, ServiceUnavailableException } from '@nestjs/common';
import type { ArgumentsHost, LoggerService } from '@nestjs/common';
import {
  LockAbortedError,
  LockBackendError,
  LockConfigError,
  LockError,
  LockLostError,
  LockTimeoutError,
} from '../../errors';

/**
 * The Retry-After a busy route answers with when nothing more specific was set. The lease
 * the holder has left is no guide: a live holder renews it, so a 300 ms job would send a
 * client away for the whole lease.
 */
export const DEFAULT_RETRY_AFTER_MS = 1_000;

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
 * | LockConfigError | 500 (the message is logged) |
 */
export function toHttpError(
  err: unknown,
  host: ArgumentsHost,
  logger: LoggerService,
  retryAfterMs = DEFAULT_RETRY_AFTER_MS,
): unknown {
  if (host.getType() !== 'http' || !(err instanceof LockError)) return err;
  if (err instanceof LockTimeoutError) {
    const seconds = Math.max(1, Math.ceil(retryAfterMs / 1_000));
    setHeader(host.switchToHttp().getResponse<HeaderTarget>(), 'Retry-After', String(seconds));
    return new ConflictException('The resource is busy with other requests. Retry later.');
  }
  if (err instanceof LockLostError) {
    return new ConflictException('The lock protecting this request was lost before the work finished. Retry.');
  }
  if (err instanceof LockBackendError || err instanceof LockAbortedError) {
    logger.warn?.(err.message);
    return new ServiceUnavailableException('Locking is unavailable right now. Retry later.');
  }
  if (err instanceof LockConfigError) logger.error(err.message);
  else logger.error(`Unexpected lock error: ${err.message}`);
  return new InternalServerErrorException();
}

function setHeader(res: HeaderTarget, name: string, value: string): void {
  if (res.headersSent || res.sent) return;
  if (typeof res.header === 'function') res.header(name, value);
  else if (typeof res.setHeader === 'function') res.setHeader(name, value);
}
