import type { Semaphore as SemaphoreObject } from '../../core';
import type { KeySpec } from './key-template';
import { lockMethod } from './lock-method';
import type { LockMethodDecorator } from './lock-method';
import { checkSemaphoreDecoratorOptions } from './semaphore-decorator-options';
import type { SemaphoreDecoratorOptions } from './semaphore-decorator-options';

/** What `LockService.semaphore()` returns (see the core `Semaphore`); the same name is the decorator. */
export type Semaphore = SemaphoreObject;

/**
 * Runs the method holding one permit of the semaphore(s) named by `key`: at most `limit`
 * calls run at once across every instance. Keys, `onBusy`, routes and `Retry-After` work as
 * for `@Locked`; `LockService.current()` inside gives the permit's handle. Not reentrant: a
 * decorated method that calls itself takes a second permit.
 *
 * @example
 * ```ts
 * @Injectable()
 * export class ExportService {
 *   @Semaphore('exports', { limit: 3 })
 *   async run(job: ExportJob) { ... }
 *
 *   @Post('partner/:id')
 *   @Semaphore('partner:{0}', { limit: 10, onBusy: 'throw' }) // full: 409 with Retry-After
 *   async call(@Param('id') id: string) { ... }
 * }
 * ```
 */
export function Semaphore(key: KeySpec, options: SemaphoreDecoratorOptions): LockMethodDecorator {
  return lockMethod('Semaphore', key, (where) => checkSemaphoreDecoratorOptions(options, where));
}
