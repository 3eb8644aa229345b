import type { AcquireOptions, PermitOptions, RwAcquireOptions } from '../options/options';

/**
 * What one decorated call asks of the engine for each of its keys: the kind of lock, the
 * options of each acquire, and for permits the semaphore's limit (each call takes one
 * permit). The layers below pick their path by `kind` and never need to cast.
 *
 * @example
 * ```ts
 * const request: LockRequest = { kind: 'permit', limit: 3, options: { waitMs: 1_000 } };
 * const handles = await engine.acquireAll(['exports'], request, 'wait');
 * ```
 */
export type LockRequest =
  | { readonly kind: 'mutex'; readonly options: AcquireOptions }
  | { readonly kind: 'read'; readonly options: RwAcquireOptions }
  | { readonly kind: 'write'; readonly options: RwAcquireOptions }
  | { readonly kind: 'permit'; readonly limit: number; readonly options: PermitOptions };

/** The same request with its options passed through `edit` (a framework adding its signal). */
export function editOptions(
  request: LockRequest,
  edit: <O extends { signal?: AbortSignal; name?: string }>(options: O) => O,
): LockRequest {
  switch (request.kind) {
    case 'mutex':
      return { kind: 'mutex', options: edit(request.options) };
    case 'read':
    case 'write':
      return { kind: request.kind, options: edit(request.options) };
    case 'permit':
      return { kind: 'permit', limit: request.limit, options: edit(request.options) };
  }
}
