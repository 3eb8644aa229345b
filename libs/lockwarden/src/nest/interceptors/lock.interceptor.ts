import { Inject, Injectable, Logger } from '@nestjs/common';
import { LockEngine } from '../../core';
import type { CallHandler, ContextType, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { Observable, catchError, concat, defer, EMPTY, from, mergeMap, throwError } from 'rxjs';
import { getLockedMetadata } from '../locked-metadata.accessor';
import { RequestLockScope } from '../request-lock-scope';
import { toHttpError } from './lock-http-errors';
import { toContextError, toGraphqlError } from './lock-context-errors';
import { checkRetryAfter, DEFAULT_RETRY_AFTER_MS } from '../retry-after';
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
const CALLER_GONE = 'the caller went away';

/** What the interceptor uses of a caller's connection. */
interface CallerConnection {
  once(event: string, listener: () => void): unknown;
  off(event: string, listener: () => void): unknown;
}

/**
 * The connection of a caller that may go away mid-handler, and the event that says it did:
 * a TCP microservice's (`TcpContext.getSocketRef().netSocket`, 'close'), a socket.io client
 * ('disconnect') or a `ws` client ('close'). Undefined for a transport with no connection per
 * caller (Redis, NATS, Kafka and the like).
 */
function callerConnection(context: ExecutionContext): { connection: CallerConnection; closeEvent: string } | undefined {
  const kind = context.getType<ContextType | 'graphql'>();
  if (kind === 'rpc') {
    const rpc = context
      .switchToRpc()
      .getContext<{ getSocketRef?: () => { netSocket?: CallerConnection } } | undefined>();
    const socket = typeof rpc?.getSocketRef === 'function' ? rpc.getSocketRef()?.netSocket : undefined;
    return socket ? { connection: socket, closeEvent: 'close' } : undefined;
  }
  if (kind === 'graphql') {
    // A resolver served over HTTP: its caller is gone when the response closes unfinished.
    const gql = context.getArgs()[2] as { req?: { res?: CallerConnection }; res?: CallerConnection } | undefined;
    const res = gql?.res ?? gql?.req?.res;
    return typeof res?.once === 'function' && typeof res.off === 'function'
      ? { connection: res, closeEvent: 'close' }
      : undefined;
  }
  if (kind === 'ws') {
    const client = context.switchToWs().getClient<(CallerConnection & { nsp?: unknown }) | undefined>();
    if (typeof client?.once !== 'function' || typeof client.off !== 'function') return undefined;
    // socket.io's sockets belong to a namespace; a `ws` socket does not.
    return { connection: client, closeEvent: client.nsp === undefined ? 'close' : 'disconnect' };
  }
  return undefined;
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
 * - Lock errors become HTTP answers (409 / 503 / 500) on routes, and `RpcException`s or
 *   `WsException`s with a code (and, when busy, a retry hint) in microservice and WebSocket
 *   handlers (toContextError); elsewhere they pass through.
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
    const scope = new RequestLockScope(decorated ? handler : undefined, (handles, reason) =>
      this.engine.interrupt(handles, reason),
    );
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
        // The handler's work is over: a lock lost by now (while its response was still being
        // sent) was lost after work that ran, which no caller should simply run again.
        const lost = scope.firstLoss();
        return lost ? throwError(() => this.engine.lostAfterWork(lost.lostError!)) : EMPTY;
      }),
    );
    const req = http ? context.switchToHttp().getRequest<HttpRequest>() : undefined;
    void scope.over.then(() => this.releaseForgotten(scope, req));
    if (http) {
      const res = context.switchToHttp().getResponse<HttpResponse>();
      onResponseClosed(res, () => {
        const clientGone = !(res.raw ?? res).writableFinished;
        scope.closeResponse(clientGone, new Error(CLIENT_GONE));
      });
    } else {
      // No response to wait for: the call is over when its Observable is.
      scope.closeResponse(false);
      // A caller that goes away mid-handler (a TCP microservice's, a WebSocket client) is
      // treated as an HTTP client that does: the handler's locks are interrupted (their signal
      // says why), and released once the handler settles, never before.
      const caller = callerConnection(context);
      if (caller) {
        const gone = (): void => {
          scope.closeResponse(true, new Error(CALLER_GONE));
        };
        caller.connection.once(caller.closeEvent, gone);
        void scope.over.then(() => caller.connection.off(caller.closeEvent, gone));
      }
    }
    const retryAfterMs = metadata?.retryAfterMs ?? this.retryAfterMs;
    return checked.pipe(
      catchError((err: unknown) => {
        const kind = context.getType<ContextType | 'graphql'>();
        if (kind === 'graphql') return throwError(() => toGraphqlError(err, this.logger, retryAfterMs));
        if (kind !== 'rpc' && kind !== 'ws')
          return throwError(() => toHttpError(err, context, this.logger, retryAfterMs));
        return from(toContextError(err, kind, this.logger, retryAfterMs)).pipe(mergeMap((e) => throwError(() => e)));
      }),
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
