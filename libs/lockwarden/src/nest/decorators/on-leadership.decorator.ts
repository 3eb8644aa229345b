import { LockConfigError } from '../../errors';
import { describe } from '../../core';
import type { LeaderTerm } from '../../core';
import { checkLeadershipName } from '../../core';
import { getOnLeadership, ON_LEADERSHIP_METADATA } from './leadership.constants';

/**
 * Calls the method when this instance gains (`'gained'`) or loses (`'lost'`: a lost
 * lease, a resignation, shutdown) the leadership of `name`, with the term as argument.
 * `LockModule` finds these methods on providers at startup and campaigns for their names,
 * as for `@LeaderOnly`. Errors the method throws are logged.
 *
 * @example
 * ```ts
 * @Injectable()
 * export class Consumer {
 *   @OnLeadership('ingest', 'gained')
 *   start(term: LeaderTerm): void { this.queue.resume(term.fencingToken); }
 *
 *   @OnLeadership('ingest', 'lost')
 *   stop(): void { this.queue.pause(); }
 * }
 * ```
 */
export function OnLeadership(name: string, event: 'gained' | 'lost'): MethodDecorator {
  checkLeadershipName(name, '@OnLeadership');
  if (event !== 'gained' && event !== 'lost') {
    throw new LockConfigError(
      `@OnLeadership('${name.slice(0, 40)}', ...) needs 'gained' or 'lost', got ${describe(event)}.`,
    );
  }
  return (target: object, propertyKey: string | symbol, descriptor: PropertyDescriptor) => {
    const method: unknown = descriptor?.value;
    if (typeof method !== 'function') {
      const where = `${target.constructor?.name ?? 'Anonymous'}.${String(propertyKey)}`;
      throw new LockConfigError(`@OnLeadership on ${where}: only methods can handle leadership events.`);
    }
    Reflect.defineMetadata(ON_LEADERSHIP_METADATA, [...getOnLeadership(method), { name, event }], method);
  };
}

/** The argument an `@OnLeadership` method receives. */
export type { LeaderTerm };
