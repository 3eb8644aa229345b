/**
 * The messages published on a lock's channel: the wire protocol between the scripts and
 * the waiters. The Lua scripts spell the same letters (release.lua, rw-release.lua,
 * rw-acquire.lua, force-unlock.lua,
 * sem-release.lua, sem-limit.lua); test/tooling/lua-scripts.spec.ts holds them to these.
 */
export const WIRE = {
  /**
   * A mutex was released with nobody queued: one waiter may try. Sent only when an attempt
   * found the lock busy while it was held (the "|w" mark acquire.lua leaves), so an
   * uncontended release publishes nothing.
   */
  released: 'r',
  /**
   * A read/write lock changed hands, or a semaphore got permits back (a release, a raised
   * limit): every waiter may try (all readers at once; as many permit waiters as fit).
   */
  rwChanged: 'a',
} as const;

const GRANT = 'g';

/** What a grant message tells the one waiter it is for. */
export interface GrantNotice {
  /** The public id of the queued waiter the lock was handed to. */
  readonly waiterId: string;
  /** The fencing token minted with the hand-off. */
  readonly fencingToken: number;
  /** The lease the hand-off set on the server, in ms (the waiter's `handoffMs`). */
  readonly leaseMs: number;
  /**
   * The number of the waiter's last attempt the server had seen when it handed the lock off
   * (the attempt that set the place it was handed). That attempt was sent before the grant,
   * so its send time is a local moment no later than the grant: where the lease counts from.
   */
  readonly seq: number;
}

/**
 * A mutex handed to the queued waiter `waiterId`, on its engine's own inbox channel:
 * `g<waiterId>:<fence>:<lease>:<seq>` (see GrantNotice).
 */
export function grantMessage(waiterId: string, fence: number | string, leaseMs: number, seq: number): string {
  return `${GRANT}${waiterId}:${fence}:${leaseMs}:${seq}`;
}

/** The grant a message announces, or undefined for any other message (or a malformed one). */
export function parseGrant(message: string): GrantNotice | undefined {
  if (message.charCodeAt(0) !== GRANT.charCodeAt(0)) return undefined;
  const [waiterId, fence, lease, seq] = message.slice(1).split(':');
  const notice = { waiterId, fencingToken: Number(fence), leaseMs: Number(lease), seq: Number(seq) };
  if (!waiterId || !(notice.fencingToken > 0) || !(notice.leaseMs > 0) || !Number.isInteger(notice.seq)) {
    return undefined;
  }
  return notice;
}
