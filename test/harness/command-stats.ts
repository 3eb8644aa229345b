import type { Redis } from 'ioredis';

/**
 * Calls per command since the server started, by the server's own count (INFO commandstats):
 * what a lock really asked of Redis, read without trusting the library's account of it.
 */
export async function commandCalls(client: Pick<Redis, 'info'>): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const m of (await client.info('commandstats')).matchAll(/^cmdstat_([\w|]+):calls=(\d+)/gm)) {
    calls.set(m[1], Number(m[2]));
  }
  return calls;
}

/** The calls of these commands (by their INFO names, e.g. `evalsha`) the server has run so far, summed. */
export async function callsOf(client: Pick<Redis, 'info'>, ...commands: string[]): Promise<number> {
  const calls = await commandCalls(client);
  return commands.reduce((sum, command) => sum + (calls.get(command) ?? 0), 0);
}
