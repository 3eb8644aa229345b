// What went wrong between this process and Redis, in the library's words. The client's own
// messages name its internals ("Reached the max retries per request limit … Refer to
// "maxRetriesPerRequest" option", "Connection is closed.") rather than what happened; the
// original error stays available as the `cause` of whatever carries this text.

/** How a connection failed, for health reports: turned away, or silence. */
export type ConnectionFailure = 'refused' | 'no-answer';

interface Said {
  /** A clause that can follow "Redis failed while …: ". */
  readonly text: string;
  /** A few words for a parenthesis: "(connection refused)". */
  readonly short: string;
  readonly failure: ConnectionFailure | undefined;
  /** The failure is in how the app set Lockwarden up, not in reaching Redis: no "check that Redis is reachable". */
  readonly setup?: true;
}

const CLOSED: Said = {
  text: 'the Redis client is closed (a client given as `client` must be connected before it is given, and closed only after the app)',
  short: 'client closed',
  failure: 'refused',
  setup: true,
};

interface SystemErrorLike {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  address?: unknown;
  port?: unknown;
  hostname?: unknown;
}

const DOWN = 'the connection to Redis is down';

function say(err: unknown): Said {
  const e = (typeof err === 'object' && err !== null ? err : {}) as SystemErrorLike;
  const message = typeof e.message === 'string' ? e.message : String(err);
  const where = typeof e.address === 'string' ? ` ${e.address}${typeof e.port === 'number' ? `:${e.port}` : ''}` : '';
  switch (e.code) {
    case 'ECONNREFUSED':
      return { text: `Redis${where} refused the connection`, short: 'connection refused', failure: 'refused' };
    case 'ETIMEDOUT':
      return { text: `connecting to Redis${where} timed out`, short: 'no answer to connect', failure: 'no-answer' };
    case 'ENOTFOUND':
    case 'EAI_AGAIN': {
      const host = typeof e.hostname === 'string' ? ` ${e.hostname}` : '';
      return { text: `the Redis host name${host} could not be resolved`, short: 'host not found', failure: 'refused' };
    }
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return { text: `the Redis host${where} is unreachable`, short: 'host unreachable', failure: 'refused' };
    case 'ECONNRESET':
    case 'EPIPE':
      return { text: 'the connection to Redis was cut', short: 'connection cut', failure: 'refused' };
    default:
      break;
  }
  if (e.name === 'MaxRetriesPerRequestError') {
    return { text: `${DOWN}; the call was dropped while reconnecting`, short: 'connection down', failure: 'refused' };
  }
  // node-redis's words for the same (its errors keep the name Error): a closed client, an
  // offline one with its queue off, a cut socket, a cluster with no node to ask.
  // node-redis's words, and Valkey GLIDE's ("Unable to execute requests; the client is closed").
  if (message === 'The client is closed' || /the client is closed/i.test(message)) return CLOSED;
  // A one-server client on a Cluster node: ioredis and node-redis say "MOVED 8915 host:port",
  // GLIDE "… - Moved: 8915 host:port".
  if (/^MOVED \d+ |\bMoved: \d+ /.test(message)) {
    return {
      text:
        'the server is a node of a Redis Cluster, and the key lives on another node (MOVED): give a Cluster client ' +
        '(redis: { cluster: [...] }, an ioredis Cluster, node-redis createCluster(), or a GLIDE GlideClusterClient)',
      short: 'a Cluster node, reached as one server',
      failure: undefined,
      setup: true,
    };
  }
  if (message === 'The client is offline') {
    return { text: DOWN, short: 'connection down', failure: 'refused' };
  }
  if (message === 'Socket closed unexpectedly') {
    return { text: 'the connection to Redis was cut', short: 'connection cut', failure: 'refused' };
  }
  if (message === 'All the root nodes are unavailable') {
    return { text: 'no node of the Redis Cluster could be reached', short: 'no node reachable', failure: 'refused' };
  }
  if (message === 'Connection is closed.' || message.startsWith("Stream isn't writeable")) {
    return { text: DOWN, short: 'connection down', failure: 'refused' };
  }
  if (e.name === 'ClusterAllFailedError' || message.startsWith('None of startup nodes is available')) {
    return { text: 'no node of the Redis Cluster could be reached', short: 'no node reachable', failure: 'refused' };
  }
  const text = message.replace(/\.+$/, '');
  if (e.name === 'ReplyError')
    return { text: `Redis answered with an error: ${text}`, short: text, failure: undefined };
  return { text, short: text, failure: undefined };
}

/**
 * Why a Redis call failed, as a clause: "Redis 127.0.0.1:6380 refused the connection",
 * "the connection to Redis is down; the call was dropped while reconnecting". Errors that
 * are not the connection's (a reply error, a timeout of our own) keep their message.
 */
export function redisReason(err: unknown): string {
  return say(err).text;
}

/** The same, in a few words: "connection refused", "connection down". */
export function redisReasonShort(err: unknown): string {
  return say(err).short;
}

/** What to do next, after the reason: look at Redis, or (for a setup mistake the reason names) nothing more. */
export function redisAdvice(err: unknown): string {
  return say(err).setup
    ? 'The lock state is unknown.'
    : 'Check that Redis is reachable; the lock state is unknown until it is.';
}

/** Whether `err` says the connection was turned away or went unanswered; undefined when it is about something else. */
export function connectionFailure(err: unknown): ConnectionFailure | undefined {
  return say(err).failure;
}
