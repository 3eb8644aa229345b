import type { LockLogger } from '../observe/logger';
import type {
  CompareDelete,
  ConnectionState,
  RedisConnection,
  ScriptSource,
  ServerConnection,
  StreamEntry,
  SubscriberConnection,
} from './connection';
import { ConnectionWatch } from './connection-watch';
import type { ConnectionOutage } from '../backend/lock-backend';
import { connectionOutageOf } from './connection-outage';

/**
 * A client the application gave, as the engine's connection. The application closes that
 * client, and may close it while the lock service still runs: a module that shuts down first
 * (`@nestjs/cache-manager` disconnects a Keyv store, and with it the client it was given, in
 * `onModuleDestroy`, before the lock service drains), or a client never connected (Keyv
 * connects lazily). Locks held then could be neither renewed nor released, and would stay
 * taken until their lease ends. So while the given client is closed, commands go through a
 * connection of Lockwarden's own to the same servers, made from that client; Lockwarden
 * closes it at shutdown. It says so once, since the application's other uses of its client
 * fail meanwhile.
 */
export class GivenConnection implements RedisConnection {
  readonly kind: RedisConnection['kind'];
  readonly cluster: boolean;
  readonly client: object;
  private standIn: RedisConnection | undefined;
  private watch: ConnectionWatch | undefined;
  /** Whether the given client was seen open: a closed client was then closed, not never connected. */
  private seenOpen: boolean;
  /** Set once the lock service closed, or the client proved it cannot be duplicated: no stand-in is opened then. */
  private noStandIn = false;

  constructor(
    private readonly given: RedisConnection,
    private readonly logger: LockLogger,
  ) {
    this.kind = given.kind;
    this.cluster = given.cluster;
    this.client = given.client;
    this.seenOpen = given.state() !== 'closed';
  }

  run(script: ScriptSource, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return this.live().run(script, keys, args);
  }

  setNxPx(key: string, value: string, ms: number): Promise<boolean> {
    return this.live().setNxPx(key, value, ms);
  }

  compareDelete(name: CompareDelete, key: string, value: string): Promise<boolean> {
    return this.live().compareDelete(name, key, value);
  }

  get(key: string): Promise<string | null> {
    return this.live().get(key);
  }

  hgetall(key: string): Promise<Record<string, string>> {
    return this.live().hgetall(key);
  }

  exists(key: string): Promise<number> {
    return this.live().exists(key);
  }

  xrange(key: string, start: string, end: string, count: number): Promise<StreamEntry[]> {
    return this.live().xrange(key, start, end, count);
  }

  xrevrange(key: string, end: string, start: string, count: number): Promise<StreamEntry[]> {
    return this.live().xrevrange(key, end, start, count);
  }

  waitReplicas(key: string, replicas: number, timeoutMs: number): Promise<number> {
    return this.live().waitReplicas(key, replicas, timeoutMs);
  }

  servers(): ServerConnection[] {
    return this.live().servers();
  }

  async serversKnown(): Promise<void> {
    await this.live().serversKnown?.();
  }

  state(): ConnectionState {
    const state = this.given.state();
    return state === 'closed' && this.standIn ? this.standIn.state() : state;
  }

  /**
   * The given client's outage while it is open; once it is closed, the stand-in's, or none
   * until the next command opens one. Without a stand-in possible, closed is down.
   */
  outage(): ConnectionOutage | undefined {
    if (this.given.state() !== 'closed') return this.given.outage();
    if (this.standIn) return connectionOutageOf(this.standIn);
    return this.noStandIn ? this.given.outage() : undefined;
  }

  on(event: 'ready' | 'error', listener: (err: Error) => void): void {
    this.given.on(event, listener);
  }

  off(event: 'ready' | 'error', listener: (err: Error) => void): void {
    this.given.off(event, listener);
  }

  describe(): string {
    return this.given.describe();
  }

  subscriber(): SubscriberConnection {
    return this.given.subscriber();
  }

  duplicate(): RedisConnection | undefined {
    return this.given.duplicate();
  }

  /** Closes the connection opened in the given client's stead, if one was; never the given client. */
  async close(): Promise<void> {
    this.noStandIn = true;
    const standIn = this.standIn;
    this.standIn = undefined;
    if (!standIn) return;
    await standIn.close();
    this.watch?.detach();
  }

  /** The given client while it is open; once it is closed, the stand-in (opened at the first command then). */
  private live(): RedisConnection {
    if (this.given.state() !== 'closed') {
      this.seenOpen = true;
      return this.given;
    }
    if (this.standIn || this.noStandIn) return this.standIn ?? this.given;
    return this.openStandIn();
  }

  private openStandIn(): RedisConnection {
    const standIn = this.given.duplicate();
    const what = this.seenOpen
      ? 'was closed while the lock service still runs (by its owner, or by a module that shuts down ' +
        "first: @nestjs/cache-manager closes a Keyv store's client in onModuleDestroy)"
      : 'is not connected';
    if (!standIn) {
      this.noStandIn = true; // said once
      this.logger.warn(
        `The Redis client given as \`client\` ${what}, and it has no duplicate() to open a connection of ` +
          "Lockwarden's own from: the locks held stay in Redis until their lease ends. Close a shared client only " +
          'after app.close().',
      );
      return this.given;
    }
    this.standIn = standIn;
    this.watch = new ConnectionWatch(standIn, this.logger);
    this.logger.warn(
      `The Redis client given as \`client\` ${what}. Lockwarden opened a connection of its own to ` +
        `${this.given.describe()}, so that its locks can still be taken, renewed and released, and closes it when ` +
        'the lock service shuts down. Close a shared client only after app.close().',
    );
    return standIn;
  }
}
