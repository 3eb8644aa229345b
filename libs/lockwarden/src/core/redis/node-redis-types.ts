// The node-redis clients (`redis` 5 and 6) as Lockwarden sees them: the public methods it
// calls, by shape, so that node-redis is never loaded unless the application gives a client.

/** What Lockwarden listens with: 'error' gets the error; the others get nothing it reads. */
type Listener = (err: Error) => void;
export type PubSubListener = (message: string, channel: string) => unknown;
/** What node-redis's `unsubscribe` takes: a listener of strings or Buffers. */
export type AnyPubSubListener = (message: string | Buffer, channel: string | Buffer) => unknown;

/** The part of any node-redis client (`redis` 5 or 6) Lockwarden uses: public methods only. */
interface NodeRedisCommon {
  readonly isOpen: boolean;
  connect(): Promise<unknown>;
  close(): Promise<unknown>;
  destroy(): unknown;
  on(event: string, listener: Listener): unknown;
  off(event: string, listener: Listener): unknown;
  listenerCount(event: string): number;
}

/**
 * A node-redis client of one server: `createClient()`.
 *
 * @example
 * ```ts
 * const client = await createClient({ url: 'redis://10.0.0.5:6379' }).on('error', console.error).connect();
 * LockModule.forRoot({ client });
 * ```
 */
export interface NodeRedisClient extends NodeRedisCommon {
  readonly isReady: boolean;
  sendCommand(args: string[]): Promise<unknown>;
  duplicate(): object;
  subscribe(channel: string, listener: PubSubListener): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  readonly options?: { url?: string; socket?: { host?: string; port?: number; path?: string } };
}

/** A node-redis Cluster client: `createCluster()`. Its masters are read through its public `masters`. */
export interface NodeRedisCluster extends NodeRedisCommon {
  /** `redis` 6 says when its first discovery of the slots is done; 5 has no such field. */
  readonly isReady?: boolean;
  readonly masters: readonly { readonly address: string; readonly client?: { readonly isReady: boolean } }[];
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  nodeClient(node: never): Promise<{ sendCommand(args: readonly string[]): Promise<unknown> }>;
  duplicate(): object;
  sSubscribe(channel: string, listener: PubSubListener): Promise<unknown>;
  sUnsubscribe(channel: string): Promise<unknown>;
}

/**
 * A node-redis Sentinel client: `createSentinel()`. `redis` 5's has no `duplicate()`: its own
 * pub/sub connection then carries Lockwarden's subscriptions too.
 */
export interface NodeRedisSentinel extends NodeRedisCommon {
  readonly isReady: boolean;
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  use(fn: never): Promise<unknown>;
  duplicate?(): object;
  subscribe(channel: string, listener: PubSubListener): Promise<unknown>;
  unsubscribe(channel: string, listener?: AnyPubSubListener): Promise<unknown>;
}

export type AnyNodeRedis = NodeRedisClient | NodeRedisCluster | NodeRedisSentinel;
