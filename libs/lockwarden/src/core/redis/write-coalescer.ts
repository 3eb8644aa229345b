import type { Cluster, Redis } from 'ioredis';
import type { RedisClient } from '../backend/lock-backend';

/**
 * The most commands one write carries. Past it, what is batched goes out while the turn
 * writes the rest, so Redis and the client work at the same time instead of in turns
 * (measured with 64 flows: whole turns lost ~20% to that lock-step, see BENCHMARKS.md).
 */
const BATCH = 32;

/** The part of a socket the coalescer uses; ioredis keeps its connection's socket in `stream`. */
interface CorkableStream {
  cork(): void;
  uncork(): void;
  readonly writableCorked?: number;
}

/**
 * Sends every command that concurrent lock flows issue in one turn in a single socket write.
 *
 * ioredis writes each command with its own `socket.write`, one system call each, and that
 * call is most of a command's client cost (see BENCHMARKS.md). When replies arrive together,
 * the flows they wake issue their next commands in the same turn; corking the socket at the
 * first of them and uncorking it once the turn's microtasks have run turns those writes into
 * one `writev`. A lone command waits only for the end of its turn, so a serial caller pays no
 * extra round trip. Unlike ioredis' auto-pipelining it adds no per-command bookkeeping, and it
 * only batches writes, never replies.
 */
export class WriteCoalescer {
  /** A command went out in this turn: the next ones in it are batched. */
  private turnOpen = false;
  private corked: CorkableStream[] | undefined;
  private batched = 0;

  constructor(private readonly client: RedisClient) {}

  /** Call right before sending a command: it goes out now, or with the rest of its turn. */
  cork(): void {
    if (!this.turnOpen) {
      // The first command of a turn is written at once: a lone (serial) caller never waits.
      this.turnOpen = true;
      process.nextTick(this.endTurn);
      return;
    }
    if (this.corked) {
      if (this.batched < BATCH) {
        this.batched++;
        return;
      }
      // Send what is batched so far, so Redis works on it while this turn writes the rest.
      this.uncork();
    }
    const streams = this.streams();
    if (streams.length === 0) return;
    for (const stream of streams) stream.cork();
    this.corked = streams;
    this.batched = 1;
  }

  private readonly endTurn = (): void => {
    this.turnOpen = false;
    this.uncork();
  };

  private uncork(): void {
    const streams = this.corked;
    this.corked = undefined;
    if (streams) for (const stream of streams) stream.uncork();
  }

  /** The live sockets commands are written to: one per master on Cluster. */
  private streams(): CorkableStream[] {
    const servers: Redis[] = this.client.isCluster ? (this.client as Cluster).nodes('master') : [this.client as Redis];
    const out: CorkableStream[] = [];
    for (const server of servers) {
      const stream = (server as unknown as { stream?: Partial<CorkableStream> }).stream;
      // Only a connected socket: commands sent before that wait in ioredis' offline queue.
      if (
        server.status === 'ready' &&
        stream &&
        typeof stream.cork === 'function' &&
        typeof stream.uncork === 'function'
      ) {
        out.push(stream as CorkableStream);
      }
    }
    return out;
  }
}
