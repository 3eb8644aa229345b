/** Keys may be 1024 characters long, and bad input any length: messages quote at most this much. */
export const MAX_QUOTED_CHARS = 200;

/**
 * Text from the caller (a key, an option name) as a message shows it: quoted and escaped,
 * so a newline in it cannot forge a log line, and cut to `max` characters with the full
 * length after it, so a huge key never makes a huge message.
 */
export function quoteKey(text: string, max: number = MAX_QUOTED_CHARS): string {
  if (text.length <= max) return JSON.stringify(text);
  let end = max;
  // Cutting between the halves of a surrogate pair would print half a character as an escape.
  if (isHighSurrogate(text.charCodeAt(end - 1))) end--;
  return `${JSON.stringify(`${text.slice(0, end)}…`)} (${text.length} characters)`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * A value the caller passed, for an error message. Never throws and never runs the value's
 * own code (toString, getters, proxy traps): a message about bad input must not fail on it.
 */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return quoteKey(value, 40);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (typeof value === 'object' && isArray(value)) return 'an array';
  return typeof value;
}

/**
 * A lock key, or whatever was passed as one, for an error message: `"order:42"`, cut to 200
 * characters with its length after it; anything but a string is named by its type. Never
 * throws, so a message about a bad key cannot fail on the key itself.
 */
export function describeKey(key: unknown): string {
  return typeof key === 'string' ? quoteKey(key) : describe(key);
}

function isArray(value: object): boolean {
  try {
    return Array.isArray(value);
  } catch {
    // A revoked proxy throws even here.
    return false;
  }
}
