import type { CompareDelete, RedisConnection } from './connection';

/** The compare-and-delete commands, in the order they are preferred when a server has both. */
const COMPARE_DELETES: readonly CompareDelete[] = ['DELIFEQ', 'DELEX'];

/**
 * Which of the server's own lock commands a connection may use instead of a script, found once
 * per connection with `COMMAND INFO` on every server behind it (each master of a Cluster), and
 * again each time it comes back (a failover may have put another version behind it). Until
 * the answer is in, and wherever one server lacks the command, the scripts are used: finding
 * out is never on the way of a lock.
 */
export class NativeCommands {
  /** The compare-and-delete every server has, if any. */
  compareDelete: CompareDelete | undefined;
  private probing = false;

  constructor(private readonly client: RedisConnection) {
    client.on('ready', () => this.probe());
    if (client.state() === 'ready') this.probe();
  }

  /** A server refused the command (a failover to an older version): scripts until the next look. */
  refused(): void {
    this.compareDelete = undefined;
    this.probe();
  }

  /**
   * The ACL user may not run the command: scripts from now on. Looked at again only when the
   * connection comes back (an ACL change is rare; a retry per release would cost a round trip).
   */
  denied(): void {
    this.compareDelete = undefined;
  }

  private probe(): void {
    if (this.probing) return;
    this.probing = true;
    void this.find()
      .then(
        (found) => (this.compareDelete = found),
        // A server that does not answer now is asked again when the connection comes back.
        () => (this.compareDelete = undefined),
      )
      .finally(() => (this.probing = false));
  }

  private async find(): Promise<CompareDelete | undefined> {
    const servers = this.client.servers();
    if (servers.length === 0) return undefined;
    const known = await Promise.all(servers.map((s) => s.commandsKnown(COMPARE_DELETES)));
    return COMPARE_DELETES.find((_, i) => known.every((k) => k[i]));
  }
}
