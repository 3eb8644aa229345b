import type { Command, Redis } from 'ioredis';

/**
 * Makes this process stall, busy, for `ms` right after `client` writes the next call named in
 * `commands` once armed: in the event loop's check phase, so its next turn starts with the
 * timers that expired meanwhile, while the answers Redis gave sit unread in the socket. The
 * stall of a starved CPU, a long task or a GC pause, on demand.
 */
export class StallAfterWrite {
  private armed = false;
  /** Whether the stall happened since it was last armed. */
  happened = false;

  constructor(
    client: Redis,
    private readonly commands: readonly string[],
    private readonly ms: number,
  ) {
    const send = client.sendCommand.bind(client);
    client.sendCommand = ((command: Command, stream?: unknown) => {
      const sent = send(command, stream as never);
      if (this.armed && this.commands.includes(command.name)) this.stall();
      return sent;
    }) as typeof client.sendCommand;
  }

  /** The next matching call written stalls the process. */
  arm(): void {
    this.armed = true;
    this.happened = false;
  }

  private stall(): void {
    this.armed = false;
    this.happened = true;
    setImmediate(() => {
      const until = performance.now() + this.ms;
      while (performance.now() < until) {
        // the process is busy: no timer, no socket read
      }
    });
  }
}
