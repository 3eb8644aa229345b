import { Inject, Injectable, Logger } from '@nestjs/common';
import { LockEngine } from '../../core';
import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { Observable, catchError, concat, defer, EMPTY, from, mergeMap, throwError } from 'rxjs';
import { getLockedMetadata } from '../decorators/locked-metadata.accessor';
import { RequestLockScope } from '../request-lock-scope';
import { DEFAULT_RETRY_AFTER_MS, toHttpError } from './lock-http-errors';
import { toRpcError } from './lock-rpc-errors';
import { checkRetryAfter } from '../decorators/locked-options';
import { LOCK_MODULE_OPTIONS } from '../lock.module-definition';
import type { LockModuleOptions } from '../lock-options.interface';

interface HttpResponse {
  once?: (event: 'close', fn: () => void) => unknown;
  raw?: HttpResponse;
  writableFinished?: boolean;
  destroyed?: boolean;
}

interface HttpRequest {
  method?: string;
  url?: string;
  originalUrl?: string;
}

const CLIENT_GONE = 'the HTTP client went away';
const CALLER_GONE = 'the microservice caller went away';

/** What the interceptor uses of a caller's connection. */
interface CallerSocket {
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
}

/**
 * The connection of a TCP microservice's caller, through `TcpContext.getSocketRef().netSocket`;
 * undefined for a transport with no connection per caller (Redis, NATS, Kafka and the like).
 */
function callerSocket(context: ExecutionContext): CallerSocket | undefined {
  if (context.getType() !== 'rpc') return undefined;
  const rpc = context.switchToRpc().getContext<{ getSocketRef?: () => { netSocket?: CallerSocket } } | undefined>();
  return typeof rpc?.getSocketRef === 'function' ? rpc.getSocketRef()?.netSocket : undefined;
}

/**
 * Ties locks to the request that takes them. `LockModule` installs it for the
 * whole application. It never releases a lock while the code holding it runs:
 *
 * - A lock-decorated route keeps its lock until the handler's work has settled
 *   **and** the request is over: an Observable completed, errored or was
 *   unsubscribed, and over HTTP the response was fully sent (streams included).
 * - If the client goes away first, the signals of the request's locks abort
 *   ("the HTTP client went away") and its pending acquires are cancelled; the
 *   locks themselves stay until the work holding them returns.
 * - Bare `acquire()` handles the request's code forgot to release are released
 *   once the handler has settled and the response is over, with one warning.
 * - Lock errors become HTTP answers (409 / 503 / 500) on routes, and `RpcException`s with a code
 * (and, when busy, a retry hint) in microservice handlers (toRpcError); elsewhere they pass through.
 *
 * @example
 * ```ts
 * // Installed by LockModule; to use it without the module's global install:
 * @UseInterceptors(LockInterceptor)
 * @Controller('orders')
 * export class OrdersController {}
 * ```
 */
@Injectable()
export class LockInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Lockwarden');

  private readonly retryAfterMs: number;

  constructor(
    private readonly engine: LockEngine,
    @Inject(LOCK_MODULE_OPTIONS) options: LockModuleOptions,
  ) {
    this.retryAfterMs =
      options.retryAfterMs === undefined
        ? DEFAULT_RETRY_AFTER_MS
        : checkRetryAfter(options.retryAfterMs, 'LockModule options');
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const handler = context.getHandler();
    const metadata = getLockedMetadata(handler);
    const decorated = metadata !== undefined;
    const http = context.getType() === 'http';
    if (!decorated && !http) return next.handle();
    const scope = new RequestLockScope(decorated ? handler : undefined);
    const handled = new Observable<unknown>((subscriber) => {
      // Call and subscribe inside the scope: Nest versions differ in which of the two runs the handler.
      const sub = scope.run(() => next.handle().subscribe(subscriber));
      return () => {
        sub.unsubscribe();
        scope.settleHandler();
      };
    });
    const checked = concat(
      handled,
      defer(() => {
        const lost = scope.firstLoss();
        return lost ? throwError(() => lost) : EMPTY;
      }),
    );
    const req = http ? context.switchToHttp().getRequest<HttpRequest>() : undefined;
    void scope.over.then(() => this.releaseForgotten(scope, req));
    if (http) {
      const res = context.switchToHttp().getResponse<HttpResponse>();
      onResponseClosed(res, () => {
        const clientGone = !(res.raw ?? res).writableFinished;
        if (clientGone) this.engine.interrupt(scope.allGranted, CLIENT_GONE);
        scope.closeResponse(clientGone, new Error(CLIENT_GONE));
      });
    } else {
      // No response to wait for: the call is over when its Observable is.
      scope.closeResponse(false);
      // A TCP microservice's caller that goes away mid-handler is treated as an HTTP client
      // that does: the handler's locks are interrupted (their signal says why), and released
      // once the handler settles, never before.
      const socket = callerSocket(context);
      if (socket && decorated) {
        const gone = (): void => {
          this.engine.interrupt(scope.allGranted, CALLER_GONE);
          scope.closeResponse(true, new Error(CALLER_GONE));
        };
        socket.once('close', gone);
        void scope.over.then(() => socket.off('close', gone));
      }
    }
    const retryAfterMs = metadata?.retryAfterMs ?? this.retryAfterMs;
    return checked.pipe(
      catchError((err: unknown) =>
        context.getType() === 'rpc'
          ? from(toRpcError(err, this.logger, retryAfterMs)).pipe(mergeMap((mapped) => throwError(() => mapped)))
          : throwError(() => toHttpError(err, context, this.logger, retryAfterMs)),
      ),
    );
  }

  private releaseForgotten(scope: RequestLockScope, req: HttpRequest | undefined): void {
    const forgotten = scope.forgotten();
    if (forgotten.length === 0) return;
    const where = req ? `${req.method ?? ''} ${req.originalUrl ?? req.url ?? ''}`.trim() : 'A handler';
    this.logger.warn(
      `${where} ended still holding ${forgotten.length} lock(s) it took with acquire() and never released (${forgotten
        .map((h) => `"${h.key}"`)
        .join(', ')}); releasing them now. Release in finally, or use withLock.`,
    );
    void this.engine.releaseAll(forgotten);
  }
}

/** Calls `fn` once the response is over: fully sent, or its connection closed early. */
function onResponseClosed(response: HttpResponse, fn: () => void): void {
  const res = response.raw ?? response;
  if (res.destroyed || res.writableFinished || typeof res.once !== 'function') {
    queueMicrotask(fn);
    return;
  }
  res.once('close', fn);
}
