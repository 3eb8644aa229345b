// What went wrong between this process and Redis, in the library's words. The client's own
// messages name its internals ("Reached the max retries per request limit … Refer to
// "maxRetriesPerRequest" option", "Connection is closed.") rather than what happened. The
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
  /** Redis answered, and said no: asking again gets the same answer. */
  readonly refusal?: Refusal;
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

/**
 * Node's codes for a TLS connection that failed on the certificate ("SELF_SIGNED_CERT_IN_CHAIN",
 * "UNABLE_TO_VERIFY_LEAF_SIGNATURE", "ERR_TLS_CERT_ALTNAME_INVALID", "CERT_HAS_EXPIRED") or
 * in the handshake ("ERR_SSL_WRONG_VERSION_NUMBER": TLS spoken to a plain port).
 */
const TLS_CODE = /CERT|^ERR_SSL_|^ERR_TLS_/;

/**
 * A call the client dropped while its connection was down (ioredis's "Reached the max retries
 * per request limit"), with the last error of that connection: the client's own error says
 * nothing of why it is down, and a certificate it will never accept is not an outage to wait
 * out. The connection that saw both makes it (core/redis/connection-watch.ts). `cause` is the
 * client's error.
 */
export class RedisCallDroppedError extends Error {
  constructor(
    dropped: unknown,
    /** Why the connection is down: its last error. */
    readonly connectionError: Error,
  ) {
    super(`${say(connectionError).text}; the call was dropped while reconnecting`, { cause: dropped });
    this.name = 'RedisCallDropped';
  }
}

/** Whether `err` says only that the connection is down, not why: a call dropped, or refused while reconnecting. */
export function saysOnlyDown(err: unknown): boolean {
  return !(err instanceof RedisCallDroppedError) && say(err).text.startsWith(DOWN);
}

function say(err: unknown): Said {
  if (err instanceof RedisCallDroppedError) {
    const why = say(err.connectionError);
    // "Redis 10.0.0.5:6379 refused the connection; …", "the TLS connection to Redis failed: …; …".
    return { ...why, text: `${why.text}; the call was dropped while reconnecting`, refusal: undefined };
  }
  const refusal = refusalOf(err);
  if (refusal) return { text: refusalText(refusal), short: refusalShort(refusal), failure: undefined, refusal };
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
  if (typeof e.code === 'string' && TLS_CODE.test(e.code)) {
    // The certificate's failures are the ones a setting fixes. The client's words name which.
    const fix = /CERT/.test(e.code) ? " (trust the CA that signed the server's certificate: the client's tls.ca)" : '';
    return {
      text: `the TLS connection to Redis${where} failed: ${message.replace(/\.+$/, '')}${fix}`,
      short: message.replace(/\.+$/, ''),
      failure: 'refused',
      setup: true,
    };
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
  // node-redis fails a command queued past its own timeout with a TimeoutError that has no message.
  if (message === '' && e.name === 'TimeoutError') {
    return { text: 'the Redis client timed out the call', short: 'client timeout', failure: 'no-answer' };
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
  const said = say(err);
  if (said.refusal)
    return 'Redis is reachable, and gives this answer to every try until it is fixed; the lock state is unknown.';
  return said.setup
    ? 'The lock state is unknown.'
    : 'Check that Redis is reachable; the lock state is unknown until it is.';
}

/** What kind of connection failure `err` is: turned away or unanswered. Undefined when it is about something else. */
export function failureCategory(err: unknown): ConnectionFailure | undefined {
  return say(err).failure;
}

// ---- Refusals ----------------------------------------------------------------------------------
// An answer no retry changes. The ACL user may not run a command, use a key or a channel. The
// server is out of memory, or does not know a command. A key holds another type of value. One of
// our scripts failed. Any other error Redis answers with (TRYAGAIN, CLUSTERDOWN, LOADING,
// MASTERDOWN, BUSY, READONLY, MOVED, ASK, NOSCRIPT...) is no refusal: it passes, and whatever
// waits goes on through it. The patterns cover Redis 7 and Valkey, whose words differ, from a
// command and from inside a script, and Valkey GLIDE, which names the code its own way.

/** Which "no": the ACL turned away a command, a key or a channel, or memory, a command the server lacks, a key's type, a script's own error. */
export type RefusalKind = 'command' | 'key' | 'channel' | 'memory' | 'unknown-command' | 'wrong-type' | 'script';

/** An answer Redis gives to every try, with what is known of where it came from. */
export interface Refusal {
  readonly kind: RefusalKind;
  /** The command as ACL rules name it ("time", "script|load"), when the answer or the script's line names it. */
  readonly command?: string;
  /** The script that sent it ("acquire"), when it is one of Lockwarden's. */
  readonly script?: string;
  /** The line of the script the server named. */
  readonly line?: number;
  /** What the server said, without its code and the script's location. */
  readonly said: string;
}

/**
 * A refusal of a script, with the command its line sends (core/redis/script-error.ts): what the
 * Redis adapters throw in place of the server's error, which stays its `cause`. Never thrown
 * to a caller by itself: it is the cause of a LockBackendError.
 */
export class RedisRefusalError extends Error {
  constructor(
    readonly refusal: Refusal,
    cause: unknown,
  ) {
    super(refusalText(refusal), { cause });
    this.name = 'RedisRefusalError';
  }
}

const ACL_KEY = /can't access at least one of the keys|no permissions to access (?:one of the keys|a key)/i;
const ACL_CHANNEL = /can't publish to the channel|no permissions to access (?:one of the channels|a channel)/i;
/** Redis 7 names no command from a script ("can't run this command"). Valkey does, and so does every server from a command. */
const ACL_COMMAND = /can't run this command or subcommand|no permissions to run the '([^']+)' command/i;
/** Any other ACL answer: Redis's code, GLIDE's name for it, Valkey's words from a script. */
const ACL_OTHER = /\bNOPERM\b|\bPermissionDenied\b|ACL failure/;
const MEMORY = /\bOOM\b:? command not allowed/;
const UNKNOWN_COMMAND = /unknown (?:redis )?command(?: '([^']*)')?|unknown subcommand/i;
const WRONG_TYPE = /\bWRONGTYPE\b/;
/** A Lua error of the script itself ("user_script:12: attempt to compare nil with number"), not the "@user_script:12" that places any error. */
const LUA_ERROR = /(?<![@\w])user_script:\d+: /;

/**
 * The refusal `err` is or carries (through its `cause`s), or undefined for any other failure:
 * a connection's, a timeout, or a transient answer (module comment above).
 */
export function refusalOf(err: unknown): Refusal | undefined {
  let deepest: unknown = err;
  let e: unknown = err;
  for (let depth = 0; depth < 5 && typeof e === 'object' && e !== null; depth++) {
    if (e instanceof RedisRefusalError) return e.refusal;
    deepest = e;
    e = (e as { cause?: unknown }).cause;
  }
  // The server's own error is the deepest: what wraps it repeats it in other words.
  const message = typeof deepest === 'string' ? deepest : (deepest as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? refusalIn(message) : undefined;
}

function refusalIn(message: string): Refusal | undefined {
  let kind: RefusalKind;
  let command: string | undefined;
  let m: RegExpExecArray | null;
  if (ACL_KEY.test(message)) kind = 'key';
  else if (ACL_CHANNEL.test(message)) kind = 'channel';
  else if ((m = ACL_COMMAND.exec(message)) || ACL_OTHER.test(message)) {
    kind = 'command';
    command = m?.[1];
  } else if (MEMORY.test(message)) kind = 'memory';
  else if ((m = UNKNOWN_COMMAND.exec(message))) {
    kind = 'unknown-command';
    command = m[1] || undefined;
  } else if (WRONG_TYPE.test(message)) kind = 'wrong-type';
  else if (LUA_ERROR.test(message)) kind = 'script';
  else return undefined;
  const line = scriptPlace(message)?.line;
  return {
    kind,
    ...(command === undefined ? {} : { command: command.toLowerCase() }),
    ...(line === undefined ? {} : { line }),
    said: saidOnly(message),
  };
}

/**
 * Where in which script an error happened, as the server says it: the script's SHA-1 and the
 * line ("script: <sha>, on @user_script:64." from Redis 7 and Valkey, "f_<sha>): @user_script:1:"
 * from earlier servers). Undefined for an error that is not a script's.
 */
export function scriptPlace(message: string): { sha: string | undefined; line: number } | undefined {
  const line = /@user_script: ?(\d+)/.exec(message) ?? /(?<![@\w])user_script:(\d+): /.exec(message);
  if (!line) return undefined;
  const sha = /script: ([0-9a-f]{40})/.exec(message) ?? /\bf_([0-9a-f]{40})/.exec(message);
  return { sha: sha?.[1], line: Number(line[1]) };
}

/** The server's words alone: no GLIDE preamble, error code, script location or final period. */
function saidOnly(message: string): string {
  return message
    .replace(/^An error was signalled by the server:? (?:- )?\w+: /, '')
    .replace(/ script: [0-9a-f]{40}, on @user_script:\d+\.?$/, '')
    .replace(/^(?:ERR|NOPERM|OOM|WRONGTYPE):? /, '')
    .replace(/\.+$/, '');
}

/** A command as a person reads it: "TIME", "SCRIPT LOAD". */
function commandName(command: string): string {
  return command.replace('|', ' ').toUpperCase();
}

/**
 * A refusal as a clause that can follow "Redis failed while …: ", naming what was refused and
 * the ACL rule (or the fix) that ends it. `<user>` stands for the user the app connects as.
 */
export function refusalText(r: Refusal): string {
  const where = r.script === undefined ? '' : ` in script ${r.script}`;
  const at = r.line === undefined ? '' : ` (line ${r.line})`;
  switch (r.kind) {
    case 'command':
      return r.command === undefined
        ? `Redis refused a command${where}${at} (ACL: ${r.said}). Allow every command Lockwarden needs ` +
            '(docs/configuration.md lists the rule) with ACL SETUSER <user>'
        : `Redis refused the command ${commandName(r.command)}${where} (ACL: the user may not run it). ` +
            `Allow it with: ACL SETUSER <user> +${r.command}`;
    case 'key':
      return (
        `Redis refused a key${where} (ACL: the user may not use it). Allow Lockwarden's keys, which all start ` +
        'with its keyPrefix, with: ACL SETUSER <user> ~<keyPrefix>*'
      );
    case 'channel':
      return (
        `Redis refused a channel${where} (ACL: the user may not use it). Allow Lockwarden's channels, which all ` +
        'start with its keyPrefix, with: ACL SETUSER <user> &<keyPrefix>*'
      );
    case 'memory':
      return (
        `Redis refused a write${where}: it is out of memory (over maxmemory, and its eviction policy frees ` +
        'nothing it may). Raise maxmemory or free memory'
      );
    case 'unknown-command':
      return (
        `Redis does not know the command${r.command === undefined ? '' : ` ${commandName(r.command)}`}${where} ` +
        `(${r.said}): it is renamed or disabled on the server, or the server is too old`
      );
    case 'wrong-type':
      return (
        `a key${where} holds another type of value than Lockwarden keeps there (${r.said}): something else ` +
        "writes under Lockwarden's keyPrefix; give Lockwarden a keyPrefix of its own"
      );
    case 'script':
      return `Lockwarden's script${r.script === undefined ? '' : ` ${r.script}`} failed${at}: ${r.said}`;
  }
}

function refusalShort(r: Refusal): string {
  switch (r.kind) {
    case 'command':
      return r.command === undefined ? 'ACL refused a command' : `ACL refused ${commandName(r.command)}`;
    case 'key':
      return 'ACL refused a key';
    case 'channel':
      return 'ACL refused a channel';
    case 'memory':
      return 'out of memory';
    case 'unknown-command':
      return r.command === undefined ? 'unknown command' : `unknown command ${commandName(r.command)}`;
    case 'wrong-type':
      return 'a key of another type';
    case 'script':
      return 'script error';
  }
}
