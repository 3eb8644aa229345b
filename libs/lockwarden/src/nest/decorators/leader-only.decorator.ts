import { LockConfigError } from '../../errors';
import { checkLeadershipName } from '../../core';
import type { LockService } from '../lock.service';
import { copyMethodMetadata } from './copy-method-metadata';
import { LEADER_ONLY_METADATA } from './leadership.constants';
import { injectLockService, lockServiceOf } from './lock-method';

/**
 * What `@LeaderOnly` may wrap: a method that returns a promise (it resolves undefined when skipped).
 *
 * @example
 * ```ts
 * @LeaderOnly('digest') async send(): Promise<void> {} // compiles
 * @LeaderOnly('digest') send(): void {}                // does not: it would return a promise
 * ```
 */
export type LeaderOnlyMethod = (...args: never[]) => PromiseLike<unknown>;

/**
 * The decorator `@LeaderOnly` returns.
 *
 * @example
 * ```ts
 * const digestLeaderOnly: LeaderOnlyDecorator = LeaderOnly('digest');
 * ```
 */
export type LeaderOnlyDecorator = <T extends LeaderOnlyMethod>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<T>,
) => TypedPropertyDescriptor<T> | void;

/**
 * Runs the method only while this instance leads `name`; otherwise the call resolves
 * undefined without running it. `LockModule` campaigns for every `@LeaderOnly` name when
 * the application starts, campaigns again after a loss, and resigns on shutdown (turn on
 * `app.enableShutdownHooks()`), so the next instance takes over at once. A graceful
 * hand-off waits for a running call to finish before the next leader is elected.
 *
 * The method must return a promise, and may resolve undefined: a skipped call does.
 * Inside it, `locks.leadership(name).signal` aborts when leadership is lost, and
 * `currentTerm.fencingToken` fences what it writes.
 *
 * @example
 * ```ts
 * @Injectable()
 * export class Digest {
 *   constructor(private readonly locks: LockService) {}
 *
 *   @Interval(60_000)
 *   @LeaderOnly('digest')
 *   async send(): Promise<void> {
 *     const { fencingToken } = this.locks.leadership('digest').currentTerm!;
 *     await this.mailer.sendDigest({ fencingToken });
 *   }
 * }
 * ```
 */
export function LeaderOnly(name: string): LeaderOnlyDecorator {
  checkLeadershipName(name, '@LeaderOnly');
  return ((target: object, propertyKey: string | symbol, descriptor: TypedPropertyDescriptor<LeaderOnlyMethod>) => {
    const where = `${className(target)}.${String(propertyKey)}()`;
    const original: unknown = descriptor?.value;
    if (!descriptor || typeof original !== 'function' || descriptor.get || descriptor.set) {
      throw new LockConfigError(
        `@LeaderOnly on ${where}: only methods can be leader-only, not getters, setters or fields.`,
      );
    }
    const method = original as (...args: unknown[]) => unknown;
    const wrapper = function (this: unknown, ...args: unknown[]): Promise<unknown> {
      const service = lockServiceOf<LockService>(this);
      if (!service) {
        return Promise.reject(
          new LockConfigError(
            `${where} is @LeaderOnly but has no LockService: create the class through Nest and import LockModule. The method did not run.`,
          ),
        );
      }
      return service.leadership(name).runIfLeader(() => method.apply(this, args));
    };
    copyMethodMetadata(original, wrapper);
    Reflect.defineMetadata(LEADER_ONLY_METADATA, name, wrapper);
    descriptor.value = wrapper as never;
    injectLockService(target);
    return descriptor;
  }) as LeaderOnlyDecorator;
}

function className(target: object): string {
  return typeof target === 'function' ? target.name : (target.constructor?.name ?? 'Anonymous');
}
