import { createParamDecorator } from '@nestjs/common';
import { LockConfigError } from '../../errors';
import { LOCK_SIGNAL_PARAMETER } from './locked.constants';

/**
 * Nest's own record of the parameter, so that a route, message or gateway handler whose only
 * special parameter is this one still gets its arguments laid out by Nest (and not as
 * `(req, res, next)`); its value is filled in by the lock decorator once the lock is held.
 */
const NEST_PARAMETER = createParamDecorator(() => undefined);

/**
 * Gives a lock-decorated method (`@Locked`, `@ReadLocked`, `@WriteLocked`, `@Semaphore`,
 * `@ScheduledLock`) the `AbortSignal` of the lock it runs under, in this parameter: a route,
 * a service method or a cron alike. It aborts with `LockLostError` when the lock is lost (and
 * with `LockInterruptedError` when the client goes away or the app shuts down); with several
 * keys, when any of them is. Pass it on to what the method awaits, or check it between steps.
 * A method that has it without a lock decorator fails the application's start.
 *
 * @example
 * ```ts
 * @Post(':id/rebuild')
 * @Locked('catalog:{0}')
 * async rebuild(@Param('id') id: string, @LockSignal() signal: AbortSignal) {
 *   for (const page of await this.pages(id)) {
 *     signal.throwIfAborted();
 *     await this.index(page, { signal });
 *   }
 * }
 * ```
 */
export function LockSignal(): ParameterDecorator {
  return (target: object, propertyKey: string | symbol | undefined, index: number) => {
    if (propertyKey === undefined) {
      const name = typeof target === 'function' ? target.name : 'a class';
      throw new LockConfigError(
        `@LockSignal() on a constructor parameter of ${name}: it goes on a parameter of a lock-decorated method.`,
      );
    }
    Reflect.defineMetadata(LOCK_SIGNAL_PARAMETER, index, target, propertyKey);
    NEST_PARAMETER()(target, propertyKey, index);
  };
}

/** The index of the method's `@LockSignal()` parameter, if it has one. */
export function lockSignalParameter(target: object, propertyKey: string | symbol): number | undefined {
  return Reflect.getMetadata(LOCK_SIGNAL_PARAMETER, target, propertyKey) as number | undefined;
}
