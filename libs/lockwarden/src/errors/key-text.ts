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
