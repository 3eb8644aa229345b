import { redisReason, refusalOf } from '../../errors/redis-reason';
import type { LockLogger } from '../observe/logger';
import type { RedisConnection } from './connection';
import { SCRIPTS } from './lua-script';

// Whether the connection's ACL user may run what Lockwarden needs, looked at each time the
// connection is ready, and said once: an app whose user lacks TIME takes uncontended locks (a
// plain SET NX) and fails every contended one, which it should hear at startup. The probe
// (acl-probe.lua) asks the ACL and runs nothing, so it costs one script call.

/**
 * Every command Lockwarden sends, as ACL rules name it, with its arguments as Lockwarden sends
 * them ($k: one of its keys, $c: one of its channels). First the commands of its scripts (every
 * `redis.call` in the .lua files beside their rooms).
 */
const SCRIPT_COMMANDS: readonly (readonly [string, string])[] = [
  ['append', 'append $k |w'],
  ['del', 'del $k'],
  ['exists', 'exists $k'],
  ['get', 'get $k'],
  ['hdel', 'hdel $k field'],
  ['hget', 'hget $k field'],
  ['hgetall', 'hgetall $k'],
  ['hset', 'hset $k field 1'],
  ['pexpire', 'pexpire $k 1000'],
  ['pttl', 'pttl $k'],
  ['set', 'set $k 1 PX 1000'],
  ['time', 'time'],
  ['xadd', 'xadd $k MAXLEN ~ 100 1-0 type probe'],
  ['zadd', 'zadd $k NX 1 member'],
  ['zcard', 'zcard $k'],
  ['zrange', 'zrange $k 0 0'],
  ['zrangebyscore', 'zrangebyscore $k -inf +inf LIMIT 0 1'],
  ['zrem', 'zrem $k member'],
  ['zremrangebyscore', 'zremrangebyscore $k -inf 1'],
  ['zscore', 'zscore $k member'],
];
/**
 * Then those of its own calls: a grant's SET NX PX and the reads of a lock's state (in
 * SCRIPT_COMMANDS already), the term log, the script runner, health, the survey, the lookup of
 * the server's own compare-and-delete (asked only where the server has it), the eviction
 * check's INFO.
 */
const CALL_COMMANDS: readonly (readonly [string, string])[] = [
  ['set', 'set $k 1 PX 1000 NX'],
  ['xrange', 'xrange $k - + COUNT 100'],
  ['xrevrange', 'xrevrange $k + - COUNT 1'],
  ['delifeq', 'delifeq $k value'],
  ['delex', 'delex $k IFEQ value'],
  ['evalsha', 'evalsha 0000000000000000000000000000000000000000 1 $k'],
  ['eval', 'eval return 1 $k'],
  ['script|load', 'script load return'],
  ['script|exists', 'script exists 0000000000000000000000000000000000000000'],
  ['ping', 'ping'],
  ['scan', 'scan 0 MATCH $k COUNT 100'],
  ['dbsize', 'dbsize'],
  ['command|info', 'command info get'],
  ['info', 'info memory'],
];
/** Of CALL_COMMANDS, those that only stand in for a script: a user without them loses nothing. */
const NATIVE_ONLY: ReadonlySet<string> = new Set(['delifeq', 'delex']);
/** The wake-up bus: scripts publish, a subscriber of Lockwarden's own listens. */
const BUS_COMMANDS: readonly (readonly [string, string])[] = [
  ['publish', 'publish $c probe'],
  ['subscribe', 'subscribe $c'],
  ['unsubscribe', 'unsubscribe $c'],
];
/** The same, sharded: on a Cluster. */
const SHARDED_BUS_COMMANDS: readonly (readonly [string, string])[] = [
  ['spublish', 'spublish $c probe'],
  ['ssubscribe', 'ssubscribe $c'],
  ['sunsubscribe', 'sunsubscribe $c'],
];

const PROBE = SCRIPTS.aclProbe;

/** What the ACL user lacks: the commands, as ACL rules name them, and whether Lockwarden's keys or channels. */
export interface AclGaps {
  readonly commands: readonly string[];
  readonly keys: boolean;
  readonly channels: boolean;
}

/**
 * What the connection's ACL user may not do of what Lockwarden does (`replicaAck`: WAIT too).
 * Rejects when Redis failed otherwise (not answering): nothing is known then.
 */
export async function aclGaps(client: RedisConnection, keyPrefix: string, replicaAck: boolean): Promise<AclGaps> {
  const commands = new Set<string>();
  let keys = false;
  let channels = false;
  const asked = [
    ...SCRIPT_COMMANDS,
    ...CALL_COMMANDS,
    ...(client.cluster ? SHARDED_BUS_COMMANDS : BUS_COMMANDS),
    ...(replicaAck ? [['wait', 'wait 0 0'] as const] : []),
  ];
  // One hash tag: one slot on a Cluster, as every script's keys and channels.
  const base = `${keyPrefix}{lockwarden-acl-probe}`;
  let reply: unknown;
  try {
    reply = await PROBE.run(client, [base, `${base}:channel`], asked.flat());
  } catch (err) {
    // The probe itself refused: EVALSHA (or EVAL), or its keys, for want of the ACL's leave.
    const refusal = refusalOf(err);
    if (refusal?.kind === 'key') keys = true;
    else if (refusal?.kind === 'command') commands.add(refusal.command ?? 'evalsha');
    else throw err;
  }
  const refused = Array.isArray(reply) ? reply.map(String) : [];
  const subscribes: string[] = [];
  for (let i = 0; i + 1 < refused.length; i += 2) {
    const [command, detail] = [refused[i], refused[i + 1]];
    if (refusalOf(detail)?.kind === 'channel') channels = true;
    else if (command.endsWith('subscribe')) subscribes.push(command);
    else commands.add(command);
  }
  // A subscribe is refused for its channel or for itself, as the publish beside it says.
  if (!channels) for (const command of subscribes) commands.add(command);
  return { commands: [...commands].sort(), keys, channels };
}

/** The ACL rule that fills `gaps`, for `keyPrefix`. */
export function aclRule(gaps: AclGaps, keyPrefix: string): string {
  const rules = gaps.commands.map((c) => `+${c}`);
  if (gaps.keys) rules.push(`~${keyPrefix}*`);
  if (gaps.channels) rules.push(`&${keyPrefix}*`);
  return `ACL SETUSER <user> ${rules.join(' ')}`;
}

/**
 * The check of one connection, to run each time it is ready: its gaps are said at WARN, each
 * once for this connection's life (a reconnect finds the same user again); a probe that fails
 * otherwise says so at debug, and the next ready tries again.
 */
export function aclCheck(
  client: RedisConnection,
  keyPrefix: string,
  replicaAck: boolean,
  logger: LockLogger,
): () => void {
  const told = new Set<string>();
  let probing = false;
  return () => {
    if (probing) return;
    probing = true;
    void aclGaps(client, keyPrefix, replicaAck)
      .then((gaps) => {
        // The server's own compare-and-delete only saves a script: without it, releases run the
        // script (held-releases.ts falls back), so lacking it is said, not warned of.
        const optional = gaps.commands.filter((c) => NATIVE_ONLY.has(c));
        if (optional.length > 0 && !told.has(optional.join())) {
          told.add(optional.join());
          logger.debug(
            `The user Lockwarden connects to ${client.describe()} as may not run ` +
              `${optional.map((c) => c.toUpperCase()).join(', ')}: releases nobody waits for run a script ` +
              `instead (+${optional.join(' +')} would save it).`,
          );
        }
        const needed = { ...gaps, commands: gaps.commands.filter((c) => !NATIVE_ONLY.has(c)) };
        const items = [...needed.commands, ...(gaps.keys ? ['~'] : []), ...(gaps.channels ? ['&'] : [])];
        if (items.length === 0) {
          logger.debug(
            `The user Lockwarden connects to ${client.describe()} as may run every command Lockwarden needs.`,
          );
          return;
        }
        if (items.every((item) => told.has(item))) return;
        for (const item of items) told.add(item);
        logger.warn(gapsText(client.describe(), needed, keyPrefix));
      })
      .catch((err: unknown) => {
        logger.debug(
          `Could not check the Redis user's permissions (${redisReason(err)}); checking again at the next connect.`,
        );
      })
      .finally(() => (probing = false));
  };
}

function gapsText(server: string, gaps: AclGaps, keyPrefix: string): string {
  const lacks = [
    ...(gaps.commands.length === 0
      ? []
      : [`run ${gaps.commands.map((c) => c.replace('|', ' ').toUpperCase()).join(', ')}`]),
    ...(gaps.keys ? [`use its keys (${keyPrefix}*)`] : []),
    ...(gaps.channels ? [`use its channels (${keyPrefix}*)`] : []),
  ];
  return (
    `The user Lockwarden connects to ${server} as may not ${lacks.join(', nor ')}. Allow it with: ` +
    `${aclRule(gaps, keyPrefix)}. Until then, what needs it fails at once with LockBackendError ` +
    '(docs/configuration.md lists the whole rule Lockwarden needs).'
  );
}
