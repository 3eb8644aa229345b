/** Metadata key of `@LeaderOnly`: the leadership name, on the wrapped method. */
export const LEADER_ONLY_METADATA = 'lockwarden:leader-only';

/** Metadata key of `@OnLeadership`: the (name, event) pairs a method handles. */
export const ON_LEADERSHIP_METADATA = 'lockwarden:on-leadership';

/** What `@OnLeadership` stores per handler. */
export interface OnLeadershipMetadata {
  readonly name: string;
  readonly event: 'gained' | 'lost';
}

/** The leadership name of a `@LeaderOnly` method, if it is one. */
export function getLeaderOnlyName(method: unknown): string | undefined {
  if (typeof method !== 'function') return undefined;
  return Reflect.getMetadata(LEADER_ONLY_METADATA, method) as string | undefined;
}

/** The leadership events a method handles through `@OnLeadership`. */
export function getOnLeadership(method: unknown): readonly OnLeadershipMetadata[] {
  if (typeof method !== 'function') return [];
  return (Reflect.getMetadata(ON_LEADERSHIP_METADATA, method) as OnLeadershipMetadata[] | undefined) ?? [];
}
