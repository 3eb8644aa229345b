import type { LoggerService } from '@nestjs/common';
import {
  LockAbortedError,
  LockBackendError,
  LockConfigError,
  LockError,
  LockLostError,
  LockTimeoutError,
} from '../../errors';

/** What a microservice caller receives for a lock error: the RpcException's error object. */
export interface LockRpcError {
  readonly status: 'error';
  /** `LOCK_BUSY` (retry later), `LOCK_LOST`, `LOCK_UNAVAILABLE` or `LOCK_ERROR`. */
  readonly code: 'LOCK_BUSY' | 'LOCK_LOST' | 'LOCK_UNAVAILABLE' | 'LOCK_ERROR';
  readonly message: string;
  /** With LOCK_BUSY: when to try again, in ms, as a route's Retry-After says in seconds. */
  readonly retryAfterMs?: number;
}

interface MicroservicesPeer {
  RpcException: new (error: object) => Error;
}

/**
 * Maps a lock error in a microservice handler (`@MessagePattern`, `@EventPattern`) to the
 * `RpcException` the caller receives, with the codes and the retry hint a route's 409 and
 * Retry-After carry over HTTP. Nest's RPC exception filter sends it as it is and logs
 * nothing, so an expected busy lock is no ERROR with a stack in the service's log. Anything
 * else passes through unchanged, as does every error when `@nestjs/microservices` (an
 * optional peer, present in any app that serves this context) cannot be loaded. Resolves
 * the error to throw: the package is loaded on first use.
 *
 * | error | code |
 * | --- | --- |
 * | LockTimeoutError | LOCK_BUSY, with `retryAfterMs` |
 * | LockLostError | LOCK_LOST |
 * | LockBackendError, LockAbortedError | LOCK_UNAVAILABLE (the message is logged as a warning) |
 * | LockConfigError, any other lock error | LOCK_ERROR (the message is logged as an error) |
 *
 * @example
 * ```ts
 * // The calling side, with a ClientProxy:
 * await firstValueFrom(client.send('work', { id })).catch((e: { code?: string; retryAfterMs?: number }) => {
 *   if (e.code === 'LOCK_BUSY') return retryIn(e.retryAfterMs);
 *   throw e;
 * });
 * ```
 */
export async function toRpcError(err: unknown, logger: LoggerService, retryAfterMs: number): Promise<unknown> {
  if (!(err instanceof LockError)) return err;
  const peer = await microservices();
  if (!peer) return err;
  return new peer.RpcException(rpcErrorOf(err, logger, retryAfterMs));
}

let loading: Promise<MicroservicesPeer | undefined> | undefined;

/**
 * `@nestjs/microservices`, loaded the way the application loaded it (a dynamic import in the
 * ES module build, `require` in the CommonJS one), so that its RpcException is the very class
 * Nest's filter checks for, under Node and under a test runner's module registry alike.
 */
function microservices(): Promise<MicroservicesPeer | undefined> {
  // A name the bundlers do not follow: the package is an optional peer.
  const name = '@nestjs/microservices';
  loading ??= import(name).then(
    (m: MicroservicesPeer) => (typeof m.RpcException === 'function' ? m : undefined),
    () => undefined,
  );
  return loading;
}

function rpcErrorOf(err: LockError, logger: LoggerService, retryAfterMs: number): LockRpcError {
  if (err instanceof LockTimeoutError) {
    return {
      status: 'error',
      code: 'LOCK_BUSY',
      message: 'The resource is busy with other requests. Retry later.',
      retryAfterMs,
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
    logger.warn?.(err.message);
    return { status: 'error', code: 'LOCK_UNAVAILABLE', message: 'Locking is unavailable right now. Retry later.' };
  }
  logger.error(err instanceof LockConfigError ? err.message : `Unexpected lock error: ${err.message}`);
  return { status: 'error', code: 'LOCK_ERROR', message: 'Internal server error' };
}
