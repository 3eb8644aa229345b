import { Inject, SetMetadata } from '@nestjs/common';
import { LockConfigError, LockLostError } from '../errors';
import type { LeaseHandle } from '../core/lease';
import type { LockService } from '../lock.service';
import { compileKeySpec } from './key-template';
import type { KeySpec } from './key-template';
import { copyMethodMetadata } from './copy-method-metadata';
import { LOCK_SERVICE_FOR_DECORATORS, LOCK_SERVICE_PROPERTY, LOCKED_METADATA } from './locked.constants';
import { getLockedMetadata } from './locked-metadata.accessor';
import type { LockedMetadata, LockMode } from './locked-metadata.accessor';
import { checkLockedOptions } from './locked-options';
import type { LockedOptions } from './locked-options';
import { requestLockScopes } from './request-lock-scope';

/**
 * Builds `@Locked` and its read/write siblings.
 *
 * Design: the decorator wraps the method where it is declared and has Nest
 * property-inject LockService into the instance. So a decorated method can
 * never run unwrapped, whoever discovers or calls it (@Cron, queues, event
 * handlers, controllers), and a module that forgets LockModule fails to
 * bootstrap instead of running the method without its lock. Wrapping later
 * with DiscoveryService would leave the method bare whenever the explorer did
 * not run.
 */
export function lockDecorator(mode: LockMode, name: string) {
  return (key: KeySpec, options?: LockedOptions): MethodDecorator =>
    (target, propertyKey, descriptor) => {
      const where = `${className(target)}.${String(propertyKey)}()`;
      const original: unknown = descriptor?.value;
      if (!descriptor || typeof original !== 'function' || descriptor.get || descriptor.set) {
        throw new LockConfigError(`@${name} on ${where}: only methods can be locked, not getters, setters or fields.`);
      }
      if (getLockedMetadata(original)) {
        throw new LockConfigError(
          `@${name} on ${where}: the method already has a lock decorator; use one, with several keys if needed.`,
        );
      }
      const paramTypes = Reflect.getMetadata('design:paramtypes', target, propertyKey) as unknown[] | undefined;
      // Without emitted metadata the declared parameter count is unknown (defaults and rest
      // parameters hide from fn.length); bad indexes are then caught at call time.
      const metadata: LockedMetadata = {
        mode,
        spec: key,
        keys: compileKeySpec(key, where, paramTypes?.length ?? Infinity),
        ...toMetadataOptions(checkLockedOptions(options, where, mode !== 'mutex'), key, where),
        where,
      };
      const wrapper = function (this: unknown, ...args: unknown[]): Promise<unknown> {
        return runLocked(this, args, metadata, original as (...a: unknown[]) => unknown, wrapper);
      };
      copyMethodMetadata(original, wrapper);
      descriptor.value = wrapper as never;
      SetMetadata(LOCKED_METADATA, metadata)(target, propertyKey, descriptor);
      injectLockService(target);
      return descriptor;
    };
}

function toMetadataOptions(
  checked: ReturnType<typeof checkLockedOptions>,
  key: KeySpec,
  where: string,
): Pick<LockedMetadata, 'options' | 'onBusy'> {
  // Metrics label a decorated lock by its template, never by the keys it expands to.
  const name = checked.acquire.name ?? templateName(key, where);
  return { options: { ...checked.acquire, name }, onBusy: checked.onBusy };
}

function templateName(key: KeySpec, where: string): string {
  if (typeof key === 'string') return key;
  if (Array.isArray(key)) return [...key].sort().join(',');
  return where.replace(/\(\)$/, '');
}

function injectLockService(prototype: object): void {
  const marker = Symbol.for('lockwarden:injected');
  if (Object.prototype.hasOwnProperty.call(prototype, marker)) return;
  Object.defineProperty(prototype, marker, { value: true });
  Inject(LOCK_SERVICE_FOR_DECORATORS)(prototype, LOCK_SERVICE_PROPERTY);
}

function className(target: object): string {
  return typeof target === 'function' ? target.name : (target.constructor?.name ?? 'Anonymous');
}

/**
 * One call of a decorated method: resolve keys, take the locks in sorted
 * order, run the method as their holder, release in reverse. Called by the
 * interceptor for a route handler, it leaves the locks to the interceptor,
 * which keeps them until the response is finished.
 */
async function runLocked(
  self: unknown,
  args: unknown[],
  meta: LockedMetadata,
  original: (...a: unknown[]) => unknown,
  wrapper: unknown,
): Promise<unknown> {
  const service = (self as Record<symbol, LockService | undefined> | undefined)?.[LOCK_SERVICE_PROPERTY];
  if (!service) {
    throw new LockConfigError(
      `${meta.where} is lock-decorated but has no LockService: create the class through Nest and import LockModule. The method did not run.`,
    );
  }
  const keys = meta.keys(self, args);
  const engine = service.lockEngine;
  const scope = requestLockScopes.getStore();
  const forRoute = scope !== undefined && scope.handler === wrapper && !scope.claimed;
  if (forRoute) scope.claimed = true;

  // A route's pending acquire is cancelled when its client goes away.
  const options = forRoute
    ? { ...meta.options, signal: withSignal(meta.options.signal, scope.abort.signal) }
    : meta.options;
  const handles = await engine.acquireAll(keys, options, meta.onBusy, meta.mode);
  if (!handles) return undefined;
  if (forRoute) {
    scope.handles = handles;
    if (scope.ended) {
      await engine.releaseAll(handles);
      throw new LockLostError(keys[0], 'the request ended before the method could start');
    }
    return engine.runInFrames(handles, () => original.apply(self, args));
  }
  let result: unknown;
  try {
    result = await engine.runInFrames(handles, () => original.apply(self, args));
  } catch (err) {
    await engine.releaseAll(handles);
    throw err;
  }
  const lost = firstLoss(handles);
  await engine.releaseAll(handles);
  if (lost) throw lost;
  return result;
}

/** The first of the handles whose lease was lost (not merely interrupted), if any. */
export function firstLoss(handles: readonly LeaseHandle[]): LockLostError | undefined {
  for (const h of handles) if (h.lease.lostError) return h.lease.lostError;
  return undefined;
}

function withSignal(mine: AbortSignal | undefined, request: AbortSignal): AbortSignal {
  return mine ? AbortSignal.any([mine, request]) : request;
}
