import { Inject, Injectable, Logger } from '@nestjs/common';
import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { Observable, catchError, concat, defer, EMPTY, throwError } from 'rxjs';
import { getLockedMetadata } from '../decorators/locked-metadata.accessor';
import { LOCK_SERVICE_FOR_DECORATORS } from '../decorators/locked.constants';
import { requestLockScopes } from '../decorators/request-lock-scope';
import type { RequestLockScope } from '../decorators/request-lock-scope';
import type { LockService } from '../lock.service';
import { toHttpError } from './lock-http-errors';

interface ClosableResponse {
  once?: (event: 'close', fn: () => void) => unknown;
  raw?: ClosableResponse;
  writableFinished?: boolean;
  destroyed?: boolean;
}

/**
 * Makes a lock-decorated route handler hold its lock for the whole response:
 * until an Observable completes, errors or is unsubscribed, and over HTTP until
 * the response is fully sent (streams included) or the client goes away. The
 * decorated method takes the lock itself (so its keys see the real `this`);
 * this interceptor only decides when it ends, so the lock is taken once.
 * Lock errors become HTTP answers here (409 / 503 / 500).
 *
 * `@Locked` applies it to every decorated method; there is nothing to register.
 */
@Injectable()
export class LockInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Lockwarden');

  constructor(@Inject(LOCK_SERVICE_FOR_DECORATORS) private readonly locks: LockService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const handler = context.getHandler();
    if (!getLockedMetadata(handler)) return next.handle();
    const scope: RequestLockScope = { handler, claimed: false, handles: undefined, ended: false };
    const http = context.getType() === 'http';
    const release = (): void => {
      scope.ended = true;
      const handles = scope.handles;
      scope.handles = undefined;
      if (handles) void this.locks.lockEngine.releaseAll(handles);
    };
    if (http) onResponseClosed(context.switchToHttp().getResponse<ClosableResponse>(), release);

    const handled = new Observable<unknown>((subscriber) =>
      // Call and subscribe inside the scope: Nest versions differ in which of the two runs the handler.
      requestLockScopes.run(scope, () => next.handle().subscribe(subscriber)),
    );
    const checked = concat(
      handled,
      defer(() => {
        const lost = scope.handles?.find((h) => h.signal.aborted);
        return lost ? throwError(() => lost.signal.reason as unknown) : EMPTY;
      }),
    );
    const mapped = checked.pipe(catchError((err: unknown) => throwError(() => toHttpError(err, context, this.logger))));
    if (http) return mapped;
    return new Observable<unknown>((subscriber) => {
      const sub = mapped.subscribe(subscriber);
      return () => {
        sub.unsubscribe();
        release();
      };
    });
  }
}

/** Calls `fn` once the response is over: fully sent, or its connection closed early. */
function onResponseClosed(response: ClosableResponse, fn: () => void): void {
  const res = response.raw ?? response;
  if (res.destroyed || res.writableFinished) {
    queueMicrotask(fn);
    return;
  }
  if (typeof res.once === 'function') res.once('close', fn);
  else queueMicrotask(fn);
}
