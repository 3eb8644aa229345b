import * as common from '@nestjs/common';
import type { LoggerService } from '@nestjs/common';
import { LockError } from '../../errors';
import { lockErrorReply } from './lock-error-reply';
import type { LockErrorReply } from './lock-error-reply';

/** The exception class of one transport package: RpcException or WsException. */
type ExceptionClass = new (error: object) => Error;

/**
 * Maps a lock error in a microservice handler (`@MessagePattern`, `@EventPattern`) or a
 * WebSocket gateway handler (`@SubscribeMessage`) to the `RpcException` or `WsException` the
 * caller receives, with the codes and the retry hint a route's 409 and Retry-After carry over
 * HTTP. Nest's filters for those contexts send it as it is and log nothing, so an expected
 * busy lock is no ERROR with a stack in the service's log (a WebSocket client receives it as
 * an `exception` event). Anything else passes through unchanged, as does every error when the
 * transport's package (an optional peer, present in any app that serves the context) cannot
 * be loaded. Resolves the error to throw: the package is loaded on first use.
 *
 * The codes are lockErrorReply's.
 *
 * @example
 * ```ts
 * // The calling side of a microservice, with a ClientProxy:
 * await firstValueFrom(client.send('work', { id })).catch((e: LockErrorReply) => {
 *   if (e.code === 'LOCK_BUSY') return retryIn(e.retryAfterMs!);
 *   throw e;
 * });
 * ```
 */

export async function toContextError(
  err: unknown,
  kind: 'rpc' | 'ws',
  logger: LoggerService,
  retryAfterMs: number,
): Promise<unknown> {
  if (!(err instanceof LockError)) return err;
  const Exception = await exceptionOf(kind);
  if (!Exception) return err;
  return new Exception(lockErrorReply(err, logger, retryAfterMs));
}

const PEERS = {
  rpc: { name: '@nestjs/microservices', exception: 'RpcException' },
  ws: { name: '@nestjs/websockets', exception: 'WsException' },
} as const;
const loading = new Map<'rpc' | 'ws', Promise<ExceptionClass | undefined>>();

/**
 * The transport package's exception class, loaded the way the application loaded the package
 * (a dynamic import in the ES module build, `require` in the CommonJS one), so that it is the
 * very class Nest's filter checks for, under Node and under a test runner's module registry.
 */
function exceptionOf(kind: 'rpc' | 'ws'): Promise<ExceptionClass | undefined> {
  let found = loading.get(kind);
  if (!found) {
    // A name the bundlers do not follow: the package is an optional peer.
    const { name, exception } = PEERS[kind];
    found = import(name).then(
      (m: Record<string, unknown>) =>
        typeof m[exception] === 'function' ? (m[exception] as ExceptionClass) : undefined,
      () => undefined,
    );
    loading.set(kind, found);
  }
  return found;
}

/** Nest's exports, read as a version without IntrinsicException may have them. */
const nest: { readonly IntrinsicException?: new (message: string) => Error } = common;

/**
 * Nest's base for exceptions that its handlers of other contexts pass on without logging them
 * as errors (Nest 11 and later). A plain Error where it is missing.
 */
const Quiet: new (message: string) => Error = nest.IntrinsicException ?? Error;

/**
 * A lock error as a GraphQL resolver's error: GraphQL copies its `extensions` into the error
 * the client receives (`code`, and `retryAfterMs` when busy), and Nest does not log it, as it
 * is one of Nest's quiet exceptions.
 */
class LockGraphqlError extends Quiet {
  readonly extensions: Readonly<Record<string, unknown>>;

  constructor(reply: LockErrorReply) {
    super(reply.message);
    this.name = 'LockGraphqlError';
    this.extensions = {
      code: reply.code,
      ...(reply.retryAfterMs === undefined ? {} : { retryAfterMs: reply.retryAfterMs }),
    };
  }
}

/**
 * Maps a lock error in a GraphQL resolver to an error whose `extensions.code` the client can act
 * on (`LOCK_BUSY` with `extensions.retryAfterMs`, `LOCK_LOST`, `LOCK_LOST_AFTER_WORK`,
 * `LOCK_UNAVAILABLE`, `LOCK_ERROR`), logged as toContextError says. Anything else passes
 * through unchanged.
 *
 * @example
 * ```ts
 * // What a client gets for a busy mutation:
 * // { "errors": [{ "message": "The resource is busy with other requests. Retry later.",
 * //                "extensions": { "code": "LOCK_BUSY", "retryAfterMs": 1000 } }] }
 * ```
 */
export function toGraphqlError(err: unknown, logger: LoggerService, retryAfterMs: number): unknown {
  return err instanceof LockError ? new LockGraphqlError(lockErrorReply(err, logger, retryAfterMs)) : err;
}
