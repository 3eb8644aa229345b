// npm run demo: three lottery instances race for the same draws, and every draw is
// recorded exactly once; winners go to a prize office that takes 3 calls at a time. Starts its own throwaway Redis unless REDIS_URL is set.
import { mkdirSync, writeFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { resolve } from 'node:path';
import { RedisProcess } from '../../../test/harness/redis-process';
import { LotteryCluster } from './lottery-cluster';
import type { Round } from './lottery-cluster';
import { table } from './table';
import { lockTimelineSvg } from './timeline';

const run = Date.now().toString(36);
let redis: RedisProcess | undefined;
let cluster: LotteryCluster | undefined;
let cleaning: Promise<void> | undefined;
/** Set on Ctrl-C: from then on the demo only cleans up, and says nothing more. */
let stopping = false;

/** Prints a line of the demo's report, unless it is being stopped. */
function say(...parts: unknown[]): void {
  if (!stopping) console.log(...parts);
}

/** What the demo writes in a Redis of yours: its draws and its locks. It removes them all when it ends. */
const DEMO_KEYS = ['lottery:*', 'lock:{lottery:*'];

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await cluster?.stop();
    await redis?.destroy();
    if (process.env.REDIS_URL) await removeDemoKeys(process.env.REDIS_URL);
  })();
  return cleaning;
}

async function removeDemoKeys(url: string): Promise<void> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    for (const match of DEMO_KEYS) {
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', match, 'COUNT', 500);
        cursor = next;
        if (keys.length > 0) await client.del(...keys);
      } while (cursor !== '0');
    }
  } catch {
    // Best effort: the report already said which keys the demo writes.
  } finally {
    client.disconnect();
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    stopping = true;
    console.log(`\n${signal}: stopped; the demo's processes and Redis are being removed.`);
    void cleanup().then(() => process.exit(130));
  });
}

function printRound(title: string, round: Round): void {
  say(`\n${title}  (draw ${round.drawId})`);
  say(
    table(
      ['instance', 'action', 'fencing token', 'ms'],
      round.rows.map((r) => [r.instance, r.action, r.fencingToken, r.ms]),
    ),
  );
}

function check(ok: boolean, what: string, failures: string[]): void {
  say(`  ${ok ? '✔' : '✘'} ${what}`);
  if (!ok) failures.push(what);
}

async function main(): Promise<void> {
  const failures: string[] = [];
  let url = process.env.REDIS_URL;
  if (url) {
    const where = url.replace(/\/\/[^@]*@/, '//***@');
    say(
      `Using your Redis at ${where}: the demo writes keys under ${DEMO_KEYS.join(' and ')} and removes them when it ends.`,
    );
  } else {
    redis = await RedisProcess.start();
    url = redis.url;
    say(`Started a throwaway Redis on ${url} (no persistence; removed on exit).`);
  }
  say('Starting 3 lottery instances as separate processes ...');
  cluster = await LotteryCluster.start({ redisUrl: url, cron: '*/5 * * * * *', drawDelayMs: 1_200, leaseMs: 1_500 });
  say(`Instances: ${cluster.instances.map((i) => `${i.id} on :${i.port}`).join(', ')}. Scheduled draws every 5 s.`);
  say(`Live lock dashboard, while the demo runs: http://127.0.0.1:${cluster.instances[0].port}/locks`);

  const scheduled = await cluster.scheduledRound();
  printRound('Round 1: the scheduled tick fires on all three instances', scheduled);
  check(scheduled.rows.filter((r) => r.action === 'drew').length === 1, 'exactly one instance drew', failures);
  check(scheduled.rows.filter((r) => r.action === 'skipped').length === 2, 'the other two skipped', failures);

  const http = await cluster.httpRound(`http-${run}`);
  printRound('Round 2: POST /draws/:id hits all three at the same moment', http);
  check(http.rows.filter((r) => r.action === 'drew').length === 1, 'one 201 Created', failures);
  check(http.rows.filter((r) => r.action === '409 busy').length === 2, 'two 409 Conflict', failures);

  const prize = await cluster.prizeRound(`prize-${run}`);
  say(`\nRound 3: three different draws at once, one per instance; all announce their winners together`);
  say(
    table(
      ['instance', 'action', 'fencing token', 'ms'],
      prize.rows.map((r) => [r.instance, r.action, r.fencingToken, r.ms]),
    ),
  );
  check(
    prize.rows.every((r) => r.action === 'drew'),
    'three 201 Created',
    failures,
  );
  check(
    prize.announced === 10 * prize.drawIds.length,
    `the prize office was told all ${prize.announced} winners`,
    failures,
  );
  check(
    prize.peak <= prize.permits,
    `it never had more than ${prize.permits} calls at once (the semaphore's permits; peak ${prize.peak})`,
    failures,
  );

  const crash = await cluster.crashRound(`crash-${run}`);
  printRound('Round 4: the instance drawing is SIGKILLed mid-draw', crash);
  check(
    crash.takeoverToken > crash.victimToken,
    `another instance took over with a newer fencing token (${crash.takeoverToken} > ${crash.victimToken})`,
    failures,
  );
  check(
    crash.lateWrite === 'stale',
    `a late write with the dead holder's token ${crash.victimToken} was refused`,
    failures,
  );

  say(`\nWinners of ${http.drawId}: ${http.winners.join(', ')}`);
  const verification = await cluster.verify();
  for (const problem of verification.problems) say(`  ✘ ${problem}`);
  failures.push(...verification.problems);

  const dir = resolve('demo-output');
  mkdirSync(dir, { recursive: true });
  const svg = resolve(dir, 'lock-timeline.svg');
  const refused =
    crash.lateWrite === 'stale'
      ? { instance: crash.victim, at: crash.lateWriteAt, token: crash.victimToken }
      : undefined;
  writeFileSync(svg, lockTimelineSvg(cluster.instances, refused));
  say(`Lock timeline: ${svg}`);

  if (failures.length > 0) {
    say(`\nFAILED: ${failures.length} check(s) did not hold.`);
    process.exitCode = 1;
  } else {
    const extra = verification.draws.length - 6;
    const more = extra > 0 ? `, plus ${extra} scheduled tick(s) that fired meanwhile` : '';
    say(
      `\nverified: ${verification.draws.length} draws (the rounds above${more}), each recorded exactly once and its winners announced once`,
    );
  }
}

main()
  .catch((err: unknown) => {
    if (stopping) return; // interrupted: what failed was the interruption itself
    console.error(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
