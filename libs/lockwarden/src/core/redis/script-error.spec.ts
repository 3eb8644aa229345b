import { LockBackendError } from '../../errors';
import { redisAdvice, RedisRefusalError, refusalOf } from '../../errors/redis-reason';
import { tellRefusal } from '../../errors/refusal-notice';
import { SCRIPTS } from './lua-script';
import { scriptError } from './script-error';

// The server's words, as Redis 7.0, Valkey 8 and Valkey GLIDE answer them (checked against each).
const { acquire, release, renew } = SCRIPTS;
const redis7 = (sha: string, line: number): Error =>
  new Error(
    `ERR The user executing the script can't run this command or subcommand script: ${sha}, on @user_script:${line}.`,
  );

describe('a script Redis refused', () => {
  it("names the command on the script's line, which Redis 7 leaves out, and the rule that allows it", () => {
    // acquire.lua's line 64 reads the server's clock.
    const err = scriptError(redis7(acquire.sha, 64), acquire, []);
    expect(err).toBeInstanceOf(RedisRefusalError);
    expect((err as Error).message).toBe(
      'Redis refused the command TIME in script acquire (ACL: the user may not run it). ' +
        'Allow it with: ACL SETUSER <user> +time',
    );
  });

  it('names the publish command a script was given, behind a local of its own', () => {
    const err = scriptError(redis7(release.sha, 71), release, ['owner', 'spublish']);
    expect(refusalOf(err)).toMatchObject({ kind: 'command', command: 'spublish', script: 'release' });
  });

  it('names every command of a line that has several', () => {
    const err = scriptError(redis7(renew.sha, 34), renew, []);
    expect(refusalOf(err)?.command).toBeUndefined();
    expect((err as Error).message).toMatch(/in script renew \(line 34\).*one of PTTL, PEXPIRE/);
  });

  it("keeps Valkey's and GLIDE's own naming of the command", () => {
    const valkey = new Error(
      `ERR ACL failure in script: User u1 has no permissions to run the 'time' command script: ${acquire.sha}, on @user_script:64.`,
    );
    const glide = new Error(
      'An error was signalled by the server: - ResponseError: ACL failure in script: User u1 has no permissions ' +
        `to run the 'time' command script: ${acquire.sha}, on @user_script:64.`,
    );
    for (const raw of [valkey, glide]) {
      expect(refusalOf(scriptError(raw, acquire, []))).toMatchObject({
        kind: 'command',
        command: 'time',
        script: 'acquire',
      });
    }
  });

  it.each([
    ['a channel', "ERR The user executing the script can't publish to the channel mentioned in the command", 'channel'],
    ['a key', 'ERR ACL failure in script: No permissions to access a key', 'key'],
    ['memory', "OOM command not allowed when used memory > 'maxmemory'.", 'memory'],
    ['a command the server lacks', 'ERR Unknown Redis command called from script', 'unknown-command'],
    ['a key of another type', 'WRONGTYPE Operation against a key holding the wrong kind of value', 'wrong-type'],
    ['a Lua error', 'ERR user_script:12: attempt to compare nil with number', 'script'],
  ])('tells %s', (_what, words, kind) => {
    const err = scriptError(new Error(`${words} script: ${acquire.sha}, on @user_script:12.`), acquire, []);
    expect(refusalOf(err)).toMatchObject({ kind, script: 'acquire', line: 12 });
  });

  it.each([
    'TRYAGAIN Multiple keys request during rehashing of slot',
    'CLUSTERDOWN The cluster is down',
    'LOADING Redis is loading the dataset in memory',
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
    'BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.',
    `READONLY You can't write against a read only replica. script: ${acquire.sha}, on @user_script:43.`,
    'MOVED 8915 127.0.0.1:7002',
    'ASK 8915 127.0.0.1:7002',
    'NOSCRIPT No matching script. Please use EVAL.',
    'Connection is closed.',
  ])('passes a transient answer on as it is: %s', (words) => {
    const raw = new Error(words);
    expect(scriptError(raw, acquire, [])).toBe(raw);
    expect(refusalOf(new LockBackendError('k', 'acquire', raw))).toBeUndefined();
  });
});

describe('a refusal outside a script', () => {
  it("is read from the server's words, through the LockBackendError that carries it", () => {
    const err = new LockBackendError(
      'k',
      'acquire',
      new Error("NOPERM this user has no permissions to run the 'info' command"),
    );
    expect(refusalOf(err)).toMatchObject({ kind: 'command', command: 'info' });
    expect(err.message).toContain(
      'Redis refused the command INFO (ACL: the user may not run it). Allow it with: ACL SETUSER <user> +info.',
    );
    expect(redisAdvice(err.cause)).not.toMatch(/Check that Redis is reachable/);
  });

  it('is said once per cause and logger, not once per call', () => {
    const warned: string[] = [];
    const logger = { warn: (m: string) => warned.push(m) };
    const time = (): Error => scriptError(redis7(acquire.sha, 64), acquire, []) as Error;
    expect(tellRefusal(logger, time())).toBe(true);
    expect(tellRefusal(logger, new LockBackendError('k', 'acquire', time()))).toBe(true);
    expect(tellRefusal(logger, new Error('Connection is closed.'))).toBe(false);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(/^Redis refused the command TIME in script acquire .* said once\.$/);
    // Another logger (another engine) is told too.
    const other: string[] = [];
    tellRefusal({ warn: (m: string) => other.push(m) }, time());
    expect(other).toHaveLength(1);
  });
});
