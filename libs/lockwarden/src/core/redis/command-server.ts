import { commandKnown } from './connection';
import type { ConnectionState, ServerConnection } from './connection';

/**
 * One server reached through a client's raw command call (node-redis's `sendCommand`, GLIDE's
 * `customCommand`): what the health probe, script loading and the survey ask of it.
 */
export class CommandServer implements ServerConnection {
  constructor(
    readonly address: string,
    readonly state: () => ConnectionState,
    private readonly send: (args: string[]) => Promise<unknown>,
  ) {}

  ping(): Promise<unknown> {
    return this.send(['PING']);
  }

  scriptLoad(source: string): Promise<unknown> {
    return this.send(['SCRIPT', 'LOAD', source]);
  }

  async scriptExists(shas: readonly string[]): Promise<number[]> {
    return ((await this.send(['SCRIPT', 'EXISTS', ...shas])) as unknown[]).map(Number);
  }

  async scan(cursor: string, match: string, count: number): Promise<[string, string[]]> {
    const [next, keys] = (await this.send(['SCAN', cursor, 'MATCH', match, 'COUNT', String(count)])) as [
      unknown,
      unknown[],
    ];
    return [String(next), keys.map(String)];
  }

  async dbsize(): Promise<number> {
    return Number(await this.send(['DBSIZE']));
  }

  async commandsKnown(names: readonly string[]): Promise<boolean[]> {
    const reply = (await this.send(['COMMAND', 'INFO', ...names])) as unknown[];
    return names.map((_, i) => commandKnown(reply[i]));
  }

  async info(section: string): Promise<string> {
    return String(await this.send(['INFO', section]));
  }
}
