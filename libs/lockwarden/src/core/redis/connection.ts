/**
 * What Lockwarden needs of a Redis client, whichever client it is (ioredis or node-redis):
 * the few commands the engine sends outside its scripts, the servers behind it, a subscriber
 * of its own, and the connection's state. Everything in `core/redis` speaks to this contract;
 * only `ioredis-connection.ts` and `node-redis-connection.ts` know a client's API, and
 * neither reads a client's private fields.
 */

import type { ConnectionOutage } from '../backend/lock-backend';

/**
 * Where a connection stands: usable; connecting for the first time (a command waits for it);
 * lost and between reconnection attempts (a command would wait or fail); closed for good.
 */
export type ConnectionState = 'ready' | 'connecting' | 'reconnecting' | 'closed';

/** One stream entry as XRANGE gives it: its id and its fields, flat (`[name, value, …]`). */
export type StreamEntry = [id: string, fields: string[]];

/** A Lua script as the server knows it: its source and that source's SHA-1. */
export interface ScriptSource {
  readonly sha: string;
  readonly source: string;
}

/** Whether a script call failed because the server does not have the script cached. */
export function isNoScript(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOSCRIPT');
}

/** One Redis server behind a connection: the server itself, or one master of a Cluster. */
export interface ServerConnection {
  /** `host:port`, for messages. */
  readonly address: string;
  state(): ConnectionState;
  ping(): Promise<unknown>;
  scriptLoad(source: string): Promise<unknown>;
  /** One 1 or 0 per sha, in order. */
  scriptExists(shas: readonly string[]): Promise<number[]>;
  /** One SCAN call: the next cursor ('0' at the end) and the keys it walked. */
  scan(cursor: string, match: string, count: number): Promise<[string, string[]]>;
  dbsize(): Promise<number>;
  /** Whether the server has each command, by `COMMAND INFO`, in order. */
  commandsKnown(names: readonly string[]): Promise<boolean[]>;
  /** `INFO section`, as the server wrote it (`name:value` lines). */
  info(section: string): Promise<string>;
}

/**
 * The server's own compare-and-delete, where it has one: `DELIFEQ key value` (Valkey 9.0 and
 * later), or `DELEX key IFEQ value` (Redis 8.4, Valkey 9.2). Each deletes the key only while
 * it holds exactly `value`, and answers 1 or 0.
 */
export type CompareDelete = 'DELIFEQ' | 'DELEX';

/** The arguments of one compare-and-delete, after its name. */
export function compareDeleteArgs(name: CompareDelete, key: string, value: string): string[] {
  return name === 'DELIFEQ' ? [key, value] : [key, 'IFEQ', value];
}

/** Whether `COMMAND INFO` answered for a command the server has (null for one it has not). */
export function commandKnown(entry: unknown): boolean {
  return Array.isArray(entry) && entry.length > 0;
}

/** A subscriber connection of the library's own, made from the engine's connection. */
export interface SubscriberConnection {
  /** Subscribes to `channel` (sharded on a Cluster); resolves once Redis confirmed it. */
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  /**
   * Listens: `message` for each message, `resubscribed` once the connection came back and
   * `channels()` are subscribed again (messages sent while it was down are lost, so listeners
   * look again then), `error` for connection errors (the client reconnects by itself).
   */
  listen(handlers: {
    message(channel: string, message: string): void;
    channels(): readonly string[];
    resubscribed(): void;
    error(err: Error): void;
  }): void;
  close(): Promise<void>;
}

/**
 * The engine's view of one Redis client: a single server (Sentinel included) or a Cluster.
 * Commands route by their first key on a Cluster.
 */
export interface RedisConnection {
  /** Which client this is, for messages and the bench. */
  readonly kind: 'ioredis' | 'node-redis' | 'glide';
  /** Whether this is a Cluster: scripts use SPUBLISH, and batches split by slot. */
  readonly cluster: boolean;
  /** The client object itself (what `LockEngine.client` gives back). */
  readonly client: object;
  /**
   * Runs a script by EVALSHA, and by EVAL when the server does not have it cached (after a
   * restart, or on a new Cluster node), which caches it there.
   */
  run(script: ScriptSource, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown>;
  /** `SET key value PX ms NX`: whether it was set. */
  setNxPx(key: string, value: string, ms: number): Promise<boolean>;
  /**
   * The server's compare-and-delete (`name`): whether `key` held exactly `value` and is now
   * deleted. Only where every server has `name` (NativeCommands).
   */
  compareDelete(name: CompareDelete, key: string, value: string): Promise<boolean>;
  get(key: string): Promise<string | null>;
  hgetall(key: string): Promise<Record<string, string>>;
  exists(key: string): Promise<number>;
  xrange(key: string, start: string, end: string, count: number): Promise<StreamEntry[]>;
  xrevrange(key: string, end: string, start: string, count: number): Promise<StreamEntry[]>;
  /**
   * `WAIT replicas timeoutMs` on the connection that carried the writes to `key` (WAIT counts
   * the writes of its own connection): the number of replicas that acknowledged them.
   */
  waitReplicas(key: string, replicas: number, timeoutMs: number): Promise<number>;
  /** Every server (each Cluster master), for script loading, health probes and SCAN. */
  servers(): ServerConnection[];
  /**
   * Resolves once `servers()` names every server. Only a client that learns its servers after
   * it is given (a GLIDE cluster client asks `CLUSTER NODES`) has it; the others know them.
   */
  serversKnown?(): Promise<void>;
  state(): ConnectionState;
  /**
   * Since when, and why, the connection is down: lost after it was once ready, or closed, and
   * not back yet. Undefined while it works, while it first connects, and where the client
   * cannot tell (a node-redis Cluster).
   */
  outage(): ConnectionOutage | undefined;
  /** `ready` each time the connection is (again) usable; `error` for connection errors. */
  on(event: 'ready' | 'error', listener: (err: Error) => void): void;
  off(event: 'ready' | 'error', listener: (err: Error) => void): void;
  /** "Redis at 10.0.0.5:6379", "the Redis Cluster", for operators. */
  describe(): string;
  /** A new connection of Lockwarden's own for pub/sub, made from this one. */
  subscriber(): SubscriberConnection;
  /**
   * A new client of the same kind, to the same servers with the same options (the client's
   * own `duplicate()`), already connecting: Lockwarden's own, which it closes. Undefined for a
   * client that cannot be duplicated (`redis` 5's Sentinel).
   */
  duplicate(): RedisConnection | undefined;
  /**
   * Closes what Lockwarden opened for this connection, once its sockets are gone: the client
   * itself when Lockwarden made it; for a client the application gave, only what was opened
   * beside it (GivenConnection).
   */
  close(): Promise<void>;
}

/** A hash reply as an object, whether it came as a RESP3 map or a flat RESP2 list. */
export function hashReply(reply: unknown): Record<string, string> {
  if (reply === null || reply === undefined) return {};
  if (Array.isArray(reply)) {
    const out: Record<string, string> = {};
    for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = String(reply[i + 1]);
    return out;
  }
  if (reply instanceof Map) {
    const out: Record<string, string> = {};
    for (const [k, v] of reply) out[String(k)] = String(v);
    return out;
  }
  return reply as Record<string, string>;
}

/** Stream entries, from `[id, [field, value, …]]` lists or node-redis's `{ id, message }` objects. */
export function streamReply(reply: unknown): StreamEntry[] {
  if (!Array.isArray(reply)) return [];
  return reply.map((entry: unknown): StreamEntry => {
    if (Array.isArray(entry)) {
      const fields = entry[1];
      return [String(entry[0]), Array.isArray(fields) ? fields.map(String) : flatten(hashReply(fields))];
    }
    const e = entry as { id: string; message: unknown };
    return [String(e.id), flatten(hashReply(e.message))];
  });
}

function flatten(fields: Record<string, string>): string[] {
  return Object.entries(fields).flat();
}
