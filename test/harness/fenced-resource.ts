import type { Redis } from 'ioredis';

const FENCED_WRITE = `
local max = tonumber(redis.call('get', KEYS[1]) or '0')
local token = tonumber(ARGV[1])
if token < max then
  redis.call('incr', KEYS[2])
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('incr', KEYS[3])
return 1
`;

/** A resource that keeps the highest fencing token per key and refuses lower ones. */
export class FencedResource {
  constructor(
    readonly client: Redis,
    private readonly prefix: string,
  ) {
    client.defineCommand('fencedWrite', { numberOfKeys: 3, lua: FENCED_WRITE });
  }

  async write(key: string, token: number, who: string): Promise<boolean> {
    const run = (this.client as unknown as Record<string, (...a: unknown[]) => Promise<number>>).fencedWrite;
    const reply = await run.call(
      this.client,
      `${this.prefix}max:${key}`,
      `${this.prefix}refused:${who}`,
      `${this.prefix}accepted:${who}`,
      String(token),
    );
    return reply === 1;
  }
}
