/**
 * The messages published on a lock's channel: the wire protocol between the scripts and
 * the waiters. The Lua scripts spell the same letters (release.lua, rw-release.lua,
 * rw-acquire.lua, force-unlock.lua,
 * sem-release.lua, sem-limit.lua); test/lua-scripts.spec.ts holds them to these.
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

/** A mutex was handed to the queued waiter `waiterId` with fencing token `fence`: `g<waiterId>:<fence>`. */
export function grantMessage(waiterId: string, fence: number | string): string {
  return `${GRANT}${waiterId}:${fence}`;
}

/**
 * The waiter id of a grant message, or undefined for any other message. The token it carries
 * is not trusted: the waiter confirms the hand-off with its own call, which returns it.
 */
export function parseGrant(message: string): { waiterId: string } | undefined {
  if (message.charCodeAt(0) !== GRANT.charCodeAt(0)) return undefined;
  return { waiterId: message.slice(1, message.lastIndexOf(':')) };
}
