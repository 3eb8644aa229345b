import { timeAwareSignal } from '../lease/lease';
import type { LeaseHandle } from '../lease/lease';

/**
 * The signal of locked work holding `handles` (what a `@LockSignal()` parameter receives): the
 * one handle's own, or one that aborts when any of them does and, as a handle's does, reads as
 * aborted once any of their leases is past its deadline.
 */
export function lockSignal(handles: readonly LeaseHandle[]): AbortSignal {
  if (handles.length === 1) return handles[0].signal;
  return timeAwareSignal(AbortSignal.any(handles.map((h) => h.signal)), () => handles.forEach((h) => h.lease.check()));
}

/** `args` with `value` at `index`. */
export function withArg(args: readonly unknown[], index: number, value: unknown): unknown[] {
  const out = [...args];
  out[index] = value;
  return out;
}
