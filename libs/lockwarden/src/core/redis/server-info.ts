/** The `name:value` fields of an INFO reply (section headers and blank lines skipped). */
export function infoFields(reply: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of reply.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  return fields;
}

/**
 * Whether a server may evict keys: it has a memory limit, and a policy that frees memory by
 * evicting (every policy but `noeviction`, which refuses writes instead). Under `volatile-*`
 * policies only keys with a TTL go, and every lock key has one: those are the first to go.
 */
export function isEvicting(maxmemory: number, policy: string): boolean {
  return maxmemory > 0 && policy !== 'noeviction';
}
