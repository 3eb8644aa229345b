import type { PermitOptions } from './permit-options';

/**
 * What `@Semaphore` asks of each key: one permit of a semaphore whose limit is `limit`. The
 * Nest layer checks the decorator's options where it is applied and hands the engine this.
 *
 * @example
 * ```ts
 * const spec: PermitSpec = { kind: 'permit', limit: 3, options: { waitMs: 1_000 } };
 * ```
 */
export interface PermitSpec {
  readonly kind: 'permit';
  readonly limit: number;
  readonly options: PermitOptions;
}
