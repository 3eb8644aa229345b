import { Inject, Injectable, Logger } from '@nestjs/common';
import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { Observable, catchError, concat, defer, EMPTY, throwError } from 'rxjs';
import type { LeaseHandle } from '../core/lease';
import type { LockHandle } from '../core/lock-handle';
import { getLockedMetadata } from '../decorators/locked-metadata.accessor';
import { LOCK_SERVICE_FOR_DECORATORS } from '../decorators/locked.constants';
import { newRequestLockScope, requestLockScopes } from '../decorators/request-lock-scope';
import type { RequestLockScope } from '../decorators/request-lock-scope';
import type { LockService } from '../lock.service';
import { toHttpError } from './lock-http-errors';

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

/**
 * Ties locks to the request that took them. `LockModule` installs it for the
 * whole application.
 *
 * - A lock-decorated route keeps its lock for the whole response: until an
 *   Observable completes, errors or is unsubscribed, and over HTTP until the
 *   response is fully sent (streams included). The decorated method takes the
 *   lock itself, so its key functions see the real `this`, and it is taken once.
 * - If the client goes away first, the handler's signal aborts ("the HTTP
 *   client went away"), a pending acquire is cancelled, and the lock is
 *   released at once.
 * - Locks that service code took during the request and forgot to release are
 *   released when the request ends, with one warning.
 * - Lock errors become HTTP answers (409 / 503 / 500); elsewhere they pass through.
 */
@Injectable()
export class LockInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Lockwarden');

  constructor(@Inject(LOCK_SERVICE_FOR_DECORATORS) private readonly locks: LockService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const handler = context.getHandler();
    const decorated = getLockedMetadata(handler) !== undefined;
    const http = context.getType() === 'http';
    if (!decorated && !http) return next.handle();
    const scope = newRequestLockScope(decorated ? handler : undefined);
    const handled = new Observable<unknown>((subscriber) =>
      // Call and subscribe inside the scope: Nest versions differ in which of the two runs the handler.
      requestLockScopes.run(scope, () => next.handle().subscribe(subscriber)),
    );
    const checked = concat(
      handled,
      defer(() => {
        const lost = scope.handles?.map((h) => (h as LeaseHandle).lease.lostError).find(Boolean);
        return lost ? throwError(() => lost) : EMPTY;
      }),
    );
    const mapped = checked.pipe(catchError((err: unknown) => throwError(() => toHttpError(err, context, this.logger))));
    if (http) {
      const res = context.switchToHttp().getResponse<HttpResponse>();
      const req = context.switchToHttp().getRequest<HttpRequest>();
      onResponseClosed(res, () => this.endRequest(scope, !(res.raw ?? res).writableFinished, req));
      return mapped;
    }
    return new Observable<unknown>((subscriber) => {
      const sub = mapped.subscribe(subscriber);
      return () => {
        sub.unsubscribe();
        this.endRequest(scope, false, undefined);
      };
    });
  }

  private endRequest(scope: RequestLockScope, clientGone: boolean, req: HttpRequest | undefined): void {
    scope.ended = true;
    const engine = this.locks.lockEngine;
    const own = scope.handles ?? [];
    scope.handles = undefined;
    if (clientGone) {
      scope.abort.abort(new Error('the HTTP client went away'));
      engine.interrupt([...own, ...scope.tracked], 'the HTTP client went away');
    }
    const forgotten: LockHandle[] = [];
    for (const h of scope.tracked) if (!own.includes(h) && h.isHeld()) forgotten.push(h);
    scope.tracked.clear();
    if (forgotten.length > 0) {
      const where = req ? `${req.method ?? ''} ${req.originalUrl ?? req.url ?? ''}`.trim() : 'A handler';
      this.logger.warn(
        `${where} ended still holding ${forgotten.length} lock(s) it never released (${forgotten
          .map((h) => `"${h.key}"`)
          .join(', ')}); releasing them now. Use withLock or release in finally.`,
      );
    }
    void engine.releaseAll([...own, ...forgotten]);
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
