import { lockDecorator } from './lock-method';
import type { LockMethodDecorator } from './lock-method';
import type { KeySpec } from './key-template';
import type { LockedOptions } from './locked-options';

/**
 * Runs the method while holding the lock(s) named by `key`, on any provider
 * method (services, `@Cron` jobs, queue and event handlers) and on controller
 * routes, where the lock lasts until the response is finished. The method
 * always returns a Promise. Inside it, `LockService.current()` gives the
 * handle (signal, fencing token). If the lock is lost before the method
 * settles, the call rejects with `LockLostError` (unless the method threw).
 *
 * @example
 * ```ts
 * @Injectable()
 * export class OrderService {
 *   @Locked('order:{0.id}')
 *   async confirm(order: Order) { ... }
 *
 *   @Cron('0 0 12 * * *')
 *   @Locked('lottery:daily-draw', { onBusy: 'skip' })
 *   async draw() { ... }
 * }
 * ```
 */
export const Locked: (key: KeySpec, options?: LockedOptions) => LockMethodDecorator = lockDecorator('mutex', 'Locked');
