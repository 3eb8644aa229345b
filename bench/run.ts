// npm run bench: Lockwarden against redlock, @sesamecare-oss/redlock and redis-semaphore,
// side by side, against one Redis, interleaved over several rounds; medians are reported.
// npm run bench -- --quick   a smoke run of every scenario (CI asserts only that it runs).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import { RedisProcess } from '../test/harness/redis-process';
import { LIBRARIES, makeAdapter } from './adapters';
import type { Adapter } from './adapters';
import { hotLock } from './hot-lock';
import { multiProcessContention } from './multi-process';
import { contention, distinct, freshNames, pingRoundTrip, serial, serverMicros } from './scenarios';
import type { ContentionResult } from './scenarios';
import { leaderFailover } from './leadership';
import { lockwardenPermits, multiProcessPermits, peerPermits } from './semaphores';
import type { PermitsResult } from './semaphores';
import { decoratorOverhead, lockwardenScale, readWrite, semaphoreScale } from './scale';
import { median } from './stats';
import { nativeCycles, nativeServers } from './native-release';
import type { NativeServer } from './native-release';

const quick = process.argv.includes('--quick');
const CFG = quick
  ? {
      rounds: 1,
      freshNames: 300,
      serialMs: 150,
      distinctMs: 150,
      contentionMs: 300,
      mpMs: 300,
      mpProcs: 2,
      scaleLocks: 1_000,
      scaleMs: 1_200,
      decoMs: 100,
      hotMs: 300,
      hotWaiters: [8],
    }
  : {
      rounds: 3,
      freshNames: 5_000,
      serialMs: 1_000,
      distinctMs: 1_000,
      contentionMs: 2_000,
      mpMs: 2_000,
      mpProcs: 4,
      scaleLocks: 10_000,
      scaleMs: 3_000,
      decoMs: 700,
      hotMs: 3_000,
      hotWaiters: [8, 64, 512],
    };

/** The lease of the leadership terms scenario 9 elects: a crash is noticed when it lapses. */
const LEADER_LEASE_MS = 2_000;

const MAIN = ['lockwarden', 'redlock', 'redlock tuned', 'sesame', 'sesame tuned', 'semaphore', 'semaphore tuned'];
const MULTI = ['lockwarden', 'redlock tuned', 'sesame tuned', 'semaphore tuned'];

/** metric id -> library -> one value per round */
const raw: Record<string, Record<string, number[]>> = {};
function record(metric: string, lib: string, value: number): void {
  ((raw[metric] ??= {})[lib] ??= []).push(value);
}
const med = (metric: string, lib: string): number | undefined => {
  const v = raw[metric]?.[lib];
  return v && v.length ? median(v) : undefined;
};

let step = 0;
let steps = 0;
function progress(what: string): void {
  step++;
  process.stderr.write(`\r[${String(Math.round((step / steps) * 100)).padStart(3)}%] ${what}`.padEnd(78));
}

function recordPermits(r: PermitsResult, lib: string, prefix = 's10'): void {
  record(`${prefix}.ops`, lib, r.opsPerSec);
  record(`${prefix}.waitP99`, lib, r.waitP99);
  record(`${prefix}.fair`, lib, r.fairness);
  if (r.clientCpuUs !== undefined) record(`${prefix}.cpu`, lib, r.clientCpuUs);
  if (r.redisCpuUs !== undefined) record(`${prefix}.rcpu`, lib, r.redisCpuUs);
  if (r.commands !== undefined) record(`${prefix}.cmds`, lib, r.commands);
}

function recordContention(prefix: string, lib: string, r: ContentionResult): void {
  record(`${prefix}.cycles`, lib, r.cyclesPerSec);
  record(`${prefix}.util`, lib, r.utilisation);
  record(`${prefix}.fair`, lib, r.fairness);
  record(`${prefix}.waitP50`, lib, r.waitP50);
  record(`${prefix}.waitP99`, lib, r.waitP99);
  record(`${prefix}.handoffP50`, lib, r.handoffP50);
  record(`${prefix}.overlaps`, lib, r.overlaps);
}

async function main(): Promise<void> {
  const started = Date.now();
  const own = process.env.REDIS_URL ? undefined : await RedisProcess.start();
  const url = process.env.REDIS_URL ?? own!.url;
  const redisVersion = await serverVersion(url);
  const adapters = new Map<string, Adapter>(MAIN.map((name) => [name, makeAdapter(name, url)]));
  const fair = makeAdapter('lockwarden fair', url);
  const tokenReader = makeAdapter('lockwarden token', url);
  const fencedReader = makeAdapter('lockwarden fenced', url);
  const nodeRedis = makeAdapter('lockwarden node-redis', url);
  const natives = nativeServers();
  steps = CFG.rounds * (MAIN.length * (5 + CFG.hotWaiters.length) + 8 + natives.length * 11) + MULTI.length + 12;
  const admin = new Redis(url);
  try {
    for (let round = 0; round < CFG.rounds; round++) {
      // Rotate the order each round, so no library always runs first (or last) on a warm machine.
      const order = MAIN.map((_, i) => MAIN[(i + round) % MAIN.length]);
      progress(`round ${round + 1}/${CFG.rounds} · PING round trip`);
      record('s1.ping', 'reference', await pingRoundTrip(url, CFG.serialMs));
      for (const lib of order) {
        progress(`round ${round + 1}/${CFG.rounds} · serial · ${lib}`);
        const s = await serial(adapters.get(lib)!, CFG.serialMs, () => admin.config('RESETSTAT'));
        record('s1.redisUs', lib, (await serverMicros(admin)) / s.cycles);
        record('s1.ops', lib, s.opsPerSec);
        record('s1.p50', lib, s.p50);
        record('s1.p99', lib, s.p99);
      }
      progress(`round ${round + 1}/${CFG.rounds} · serial, reading the token · lockwarden`);
      const st = await serial(tokenReader, CFG.serialMs, () => admin.config('RESETSTAT'));
      record('s1t.redisUs', 'lockwarden', (await serverMicros(admin)) / st.cycles);
      record('s1t.ops', 'lockwarden', st.opsPerSec);
      record('s1t.p50', 'lockwarden', st.p50);
      progress(`round ${round + 1}/${CFG.rounds} · serial, token minted with the grant · lockwarden`);
      const sf = await serial(fencedReader, CFG.serialMs, () => admin.config('RESETSTAT'));
      record('s1f.redisUs', 'lockwarden', (await serverMicros(admin)) / sf.cycles);
      record('s1f.ops', 'lockwarden', sf.opsPerSec);
      progress(`round ${round + 1}/${CFG.rounds} · serial, through node-redis · lockwarden`);
      const sn = await serial(nodeRedis, CFG.serialMs, () => admin.config('RESETSTAT'));
      record('s1n.redisUs', 'lockwarden', (await serverMicros(admin)) / sn.cycles);
      record('s1n.ops', 'lockwarden', sn.opsPerSec);
      record('s1n.p50', 'lockwarden', sn.p50);
      for (const lib of order) {
        progress(`round ${round + 1}/${CFG.rounds} · never-seen names · ${lib}`);
        const f = await freshNames(adapters.get(lib)!, CFG.freshNames, admin);
        record('s11.ops', lib, f.opsPerSec);
        record('s11.redisUs', lib, f.redisUs);
        record('s11.keys', lib, f.keysLeft);
        record('s11.forever', lib, f.keysForever);
      }
      for (const lib of order) {
        progress(`round ${round + 1}/${CFG.rounds} · 64 flows · ${lib}`);
        record('s2.ops', lib, await distinct(adapters.get(lib)!, CFG.distinctMs));
      }
      progress(`round ${round + 1}/${CFG.rounds} · 64 flows, through node-redis · lockwarden`);
      record('s2n.ops', 'lockwarden', await distinct(nodeRedis, CFG.distinctMs));
      for (const lib of order) {
        progress(`round ${round + 1}/${CFG.rounds} · 64 flows, never-seen names · ${lib}`);
        record('s2f.ops', lib, await distinct(adapters.get(lib)!, CFG.distinctMs, 64, true));
      }
      for (const lib of order) {
        progress(`round ${round + 1}/${CFG.rounds} · contention · ${lib}`);
        recordContention('s3', lib, await contention(adapters.get(lib)!, CFG.contentionMs));
      }
      progress(`round ${round + 1}/${CFG.rounds} · fair contention · lockwarden`);
      recordContention('s5', 'lockwarden', await contention(fair, CFG.contentionMs));
      progress(`round ${round + 1}/${CFG.rounds} · read/write · lockwarden`);
      const rw = await readWrite(url, CFG.serialMs);
      record('s6.reads', 'lockwarden', rw.readsPerSec);
      record('s6.handoffP50', 'lockwarden', rw.handoffP50);
    }
    for (let round = 0; round < CFG.rounds; round++) {
      const order = MAIN.map((_, i) => MAIN[(i + round) % MAIN.length]);
      for (const waiters of CFG.hotWaiters) {
        for (const lib of order) {
          progress(`round ${round + 1}/${CFG.rounds} · a hot lock, ${waiters} waiters in 4 processes · ${lib}`);
          const h = await hotLock(url, admin, lib, CFG.hotMs, waiters);
          record(`s13.${waiters}.ops`, lib, h.grantsPerSec);
          record(`s13.${waiters}.cpu`, lib, h.redisCpuUs);
          record(`s13.${waiters}.cmds`, lib, h.commands);
          record(`s13.${waiters}.fair`, lib, h.fairness);
          record(`s13.${waiters}.waitP99`, lib, h.waitP99);
          record(`s13.${waiters}.overlaps`, lib, h.overlaps);
        }
      }
    }
    for (const lib of MULTI) {
      progress(`contention across ${CFG.mpProcs} processes · ${lib}`);
      recordContention('s4', lib, await multiProcessContention(url, lib, CFG.mpMs, CFG.mpProcs));
    }
    progress(`watchdog with ${CFG.scaleLocks} locks · lockwarden`);
    const lw = await lockwardenScale(url, CFG.scaleLocks, CFG.scaleMs);
    record('s7.calls', 'lockwarden', lw.callsPerRound);
    record('s7.cpu', 'lockwarden', lw.cpuPercent);
    progress(`watchdog with ${CFG.scaleLocks} locks · semaphore`);
    const rs = await semaphoreScale(url, CFG.scaleLocks, CFG.scaleMs);
    record('s7.calls', 'semaphore', rs.callsPerRound);
    record('s7.cpu', 'semaphore', rs.cpuPercent);
    // The same locks on a server that may evict: the eviction check (INFO stats a few times a
    // second while locks are held) on top of the renewals.
    progress(`watchdog with ${CFG.scaleLocks} locks on a server that may evict · lockwarden`);
    const evicting = await RedisProcess.start({ args: ['--maxmemory', '4gb', '--maxmemory-policy', 'volatile-lru'] });
    try {
      const ev = await lockwardenScale(evicting.url, CFG.scaleLocks, CFG.scaleMs);
      record('s7.evictCpu', 'lockwarden', ev.cpuPercent);
      record('s7.evictInfo', 'lockwarden', ev.infoPerSec);
    } finally {
      await evicting.stop();
    }
    progress('@Locked overhead');
    const deco = await decoratorOverhead(url, CFG.decoMs, CFG.rounds * 2);
    record('s8.direct', 'lockwarden', deco.direct);
    record('s8.decorated', 'lockwarden', deco.decorated);
    record('s8.overhead', 'lockwarden', (deco.direct / deco.decorated - 1) * 100);
    for (let round = 0; round < CFG.rounds; round++) {
      progress(`round ${round + 1}/${CFG.rounds} · permits, 16 workers, 4 permits`);
      recordPermits(await lockwardenPermits(url, 16, 4, CFG.distinctMs), 'lockwarden');
      recordPermits(await peerPermits(url, 16, 4, CFG.distinctMs, false), 'semaphore');
      recordPermits(await peerPermits(url, 16, 4, CFG.distinctMs, true), 'semaphore tuned');
    }
    for (const lib of ['lockwarden', 'semaphore', 'semaphore tuned'] as const) {
      progress(`permits across ${CFG.mpProcs} processes · ${lib}`);
      recordPermits(await multiProcessPermits(url, admin, lib, CFG.mpMs, CFG.mpProcs), lib, 's10mp');
      progress(`permits across ${CFG.mpProcs} processes, held 2 ms · ${lib}`);
      recordPermits(await multiProcessPermits(url, admin, lib, CFG.mpMs, CFG.mpProcs, 2, 1), lib, 's10mph');
    }
    // Rounds outermost: each round meets both servers, so neither always runs on a warmer machine.
    for (let round = 0; round < CFG.rounds; round++) {
      for (const server of natives) await nativeCycles(server, CFG, record, progress);
    }
    for (const [name, script] of [
      ['Valkey 9', 'tools/valkey9.sh'],
      ['Redis 8.6', 'tools/redis8.sh'],
    ] as const) {
      if (!natives.some((n) => n.name === name)) {
        console.log(`\n${name}: not built here, so its rows of scenario 12 are skipped (${script} builds it).`);
      }
    }
    progress('leader failover');
    for (let round = 0; round < CFG.rounds; round++) {
      const failover = await leaderFailover(url, LEADER_LEASE_MS);
      record('s9.resign', 'lockwarden', failover.resignMs);
      record('s9.crash', 'lockwarden', failover.crashMs);
    }
    progress('done');
    process.stderr.write('\n');
  } finally {
    admin.disconnect();
    await Promise.all([...adapters.values(), fair, tokenReader, fencedReader, nodeRedis].map((a) => a.close()));
    await own?.destroy();
  }

  const table = renderTable();
  const targets = checkTargets();
  const ping = med('s1.ping', 'reference');
  const reference =
    ping === undefined
      ? ''
      : `Reference: one ioredis PING round trip p50 ${ping.toFixed(3)} ms; two are ${(2 * ping).toFixed(3)} ms, the floor of a serial cycle.`;
  const seconds = Math.round((Date.now() - started) / 1000);
  const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, Redis ${redisVersion}`;
  console.log(`\n${machine}${quick ? ' (quick run: figures are not meaningful)' : ''}\n`);
  console.log(table);
  console.log(`\n${reference}`);
  // A quick run's figures mean nothing, so it names the targets without judging them.
  const verdict = (t: { ok: boolean }): string => (quick ? '·' : t.ok ? '✔' : '✘');
  const heading = quick ? 'Targets (not judged in a quick run)' : 'Targets';
  console.log(`\n${heading}\n${targets.map((t) => `  ${verdict(t)} ${t.text}`).join('\n')}`);
  console.log(`\n(${seconds} s)`);

  if (!quick) {
    const date = new Date().toISOString().replace(/[:]/g, '-').slice(0, 19);
    mkdirSync(resolve('bench/results'), { recursive: true });
    const file = resolve('bench/results', `${date}.json`);
    writeFileSync(
      file,
      `${JSON.stringify({ date: new Date().toISOString(), machine, config: CFG, raw, targets }, null, 2)}\n`,
    );
    updateBenchmarksMd(machine, `${table}\n\n${reference}`, targets, date);
    console.log(`Raw figures: bench/results/${date}.json; table written to BENCHMARKS.md.`);
  }
}

interface Row {
  readonly label: string;
  readonly metric: string;
  readonly higherIsBetter: boolean;
  readonly unit: 'k/s' | 'ms' | 'x' | '%' | 'n' | 'µs';
  /** The peers' figures to show and compare with, when ours is a variant of their row. */
  readonly peers?: string;
}

const ROWS: Row[] = [
  { label: '1 serial acquire+release', metric: 's1.ops', higherIsBetter: true, unit: 'k/s' },
  { label: '1 latency p50', metric: 's1.p50', higherIsBetter: false, unit: 'ms' },
  { label: '1 latency p99', metric: 's1.p99', higherIsBetter: false, unit: 'ms' },
  { label: '1 Redis CPU per cycle, µs', metric: 's1.redisUs', higherIsBetter: false, unit: 'µs' },
  { label: '1t serial, reading the token', metric: 's1t.ops', higherIsBetter: true, unit: 'k/s' },
  { label: '1t latency p50, reading the token', metric: 's1t.p50', higherIsBetter: false, unit: 'ms' },
  { label: '1t Redis CPU per cycle, reading the token, µs', metric: 's1t.redisUs', higherIsBetter: false, unit: 'µs' },
  { label: '1f serial, token minted with the grant (fenced)', metric: 's1f.ops', higherIsBetter: true, unit: 'k/s' },
  { label: '1f Redis CPU per cycle, fenced, µs', metric: 's1f.redisUs', higherIsBetter: false, unit: 'µs' },
  { label: '1n serial, through node-redis', metric: 's1n.ops', peers: 's1.ops', higherIsBetter: true, unit: 'k/s' },
  {
    label: '1n latency p50, through node-redis',
    metric: 's1n.p50',
    peers: 's1.p50',
    higherIsBetter: false,
    unit: 'ms',
  },
  {
    label: '1n Redis CPU per cycle, through node-redis, µs',
    metric: 's1n.redisUs',
    peers: 's1.redisUs',
    higherIsBetter: false,
    unit: 'µs',
  },
  { label: '2 64 flows, distinct keys', metric: 's2.ops', higherIsBetter: true, unit: 'k/s' },
  { label: '2n 64 flows, through node-redis', metric: 's2n.ops', peers: 's2.ops', higherIsBetter: true, unit: 'k/s' },
  { label: '2 64 flows, never-seen names', metric: 's2f.ops', higherIsBetter: true, unit: 'k/s' },
  { label: '11 serial, never-seen names', metric: 's11.ops', higherIsBetter: true, unit: 'k/s' },
  { label: '11 Redis CPU per cycle, never-seen names, µs', metric: 's11.redisUs', higherIsBetter: false, unit: 'µs' },
  { label: '11 keys left per 10 000 names', metric: 's11.keys', higherIsBetter: false, unit: 'n' },
  { label: '11 keys left per 10 000 names with no TTL', metric: 's11.forever', higherIsBetter: false, unit: 'n' },
  { label: '3 contention: cycles', metric: 's3.cycles', higherIsBetter: true, unit: 'k/s' },
  { label: '3 utilisation', metric: 's3.util', higherIsBetter: true, unit: 'x' },
  { label: '3 fairness (min/max)', metric: 's3.fair', higherIsBetter: true, unit: 'x' },
  { label: '3 wait p50', metric: 's3.waitP50', higherIsBetter: false, unit: 'ms' },
  { label: '3 wait p99', metric: 's3.waitP99', higherIsBetter: false, unit: 'ms' },
  { label: '3 hand-off p50', metric: 's3.handoffP50', higherIsBetter: false, unit: 'ms' },
  { label: '3 overlapping holds', metric: 's3.overlaps', higherIsBetter: false, unit: 'n' },
  { label: '4 4 processes: utilisation', metric: 's4.util', higherIsBetter: true, unit: 'x' },
  { label: '4 fairness', metric: 's4.fair', higherIsBetter: true, unit: 'x' },
  { label: '4 wait p99', metric: 's4.waitP99', higherIsBetter: false, unit: 'ms' },
  { label: '4 hand-off p50', metric: 's4.handoffP50', higherIsBetter: false, unit: 'ms' },
  { label: '5 fair acquires: fairness', metric: 's5.fair', higherIsBetter: true, unit: 'x' },
  { label: '5 fair acquires: utilisation', metric: 's5.util', higherIsBetter: true, unit: 'x' },
  { label: '6 16 readers, one key', metric: 's6.reads', higherIsBetter: true, unit: 'k/s' },
  { label: '6 writer hand-off p50', metric: 's6.handoffP50', higherIsBetter: false, unit: 'ms' },
  { label: '7 round trips to renew all locks once', metric: 's7.calls', higherIsBetter: false, unit: 'n' },
  { label: '7 CPU while renewing', metric: 's7.cpu', higherIsBetter: false, unit: '%' },
  { label: '7e CPU while renewing, server may evict', metric: 's7.evictCpu', higherIsBetter: false, unit: '%' },
  { label: '7e eviction checks (INFO) per second', metric: 's7.evictInfo', higherIsBetter: false, unit: 'n' },
  { label: '8 @Locked overhead vs withLock', metric: 's8.overhead', higherIsBetter: false, unit: '%' },
  { label: '10 permits: 16 workers, 4 permits', metric: 's10.ops', higherIsBetter: true, unit: 'k/s' },
  { label: '10 permits: wait p99', metric: 's10.waitP99', higherIsBetter: false, unit: 'ms' },
  { label: '10 permits: fairness (min/max)', metric: 's10.fair', higherIsBetter: true, unit: 'x' },
  { label: '10 permits across processes, 4 workers each', metric: 's10mp.ops', higherIsBetter: true, unit: 'k/s' },
  { label: '10 across processes: wait p99', metric: 's10mp.waitP99', higherIsBetter: false, unit: 'ms' },
  { label: '10 across processes: fairness', metric: 's10mp.fair', higherIsBetter: true, unit: 'x' },
  {
    label: '10 across processes: client CPU per cycle, µs (all processes)',
    metric: 's10mp.cpu',
    higherIsBetter: false,
    unit: 'µs',
  },
  { label: '10 across processes: Redis CPU per grant, µs', metric: 's10mp.rcpu', higherIsBetter: false, unit: 'µs' },
  { label: '10 across processes: Redis commands per grant', metric: 's10mp.cmds', higherIsBetter: false, unit: 'n' },
  {
    label: '10 across processes, held 2 ms, think 1 ms',
    metric: 's10mph.ops',
    higherIsBetter: true,
    unit: 'k/s',
  },
  { label: '10 held 2 ms: wait p99', metric: 's10mph.waitP99', higherIsBetter: false, unit: 'ms' },
  { label: '10 held 2 ms: fairness between processes', metric: 's10mph.fair', higherIsBetter: true, unit: 'x' },
  { label: '10 held 2 ms: Redis CPU per grant, µs', metric: 's10mph.rcpu', higherIsBetter: false, unit: 'µs' },
  { label: '9 leader hand-off after resign()', metric: 's9.resign', higherIsBetter: false, unit: 'ms' },
  {
    label: `9 leader failover after a crash (lease ${LEADER_LEASE_MS} ms)`,
    metric: 's9.crash',
    higherIsBetter: false,
    unit: 'ms',
  },
  ...[8, 64, 512].flatMap(hotRows),
  ...nativeRows('Valkey 9', 's12'),
  ...nativeRows('Redis 8.6', 's12r'),
];

/** Scenario 13's rows for `waiters` flows on one hot key, in 4 processes (bench/hot-lock.ts). */
function hotRows(waiters: number): Row[] {
  const m = `s13.${waiters}`;
  const at = `${waiters} waiters`;
  return [
    { label: `13 hot lock, 4 processes, ${at}: grants`, metric: `${m}.ops`, higherIsBetter: true, unit: 'k/s' },
    { label: `13 ${at}: Redis CPU per grant, µs`, metric: `${m}.cpu`, higherIsBetter: false, unit: 'µs' },
    { label: `13 ${at}: Redis commands per grant`, metric: `${m}.cmds`, higherIsBetter: false, unit: 'n' },
    { label: `13 ${at}: fairness between processes`, metric: `${m}.fair`, higherIsBetter: true, unit: 'x' },
    { label: `13 ${at}: wait p99`, metric: `${m}.waitP99`, higherIsBetter: false, unit: 'ms' },
    { label: `13 ${at}: overlapping holds`, metric: `${m}.overlaps`, higherIsBetter: false, unit: 'n' },
  ];
}

/**
 * Scenario 12's rows on one server with its own compare-and-delete (`name`, its metric ids
 * starting with `m`, see bench/native-release.ts): each run's figures beside the peers' on the
 * same server.
 */
function nativeRows(name: NativeServer['name'], m: string): Row[] {
  const runs: [metric: string, scenario: string, what: string][] = [
    [m, '12', 'native release'],
    [`${m}lua`, '12', 'script release'],
    [`${m}n`, '12n', 'node-redis, native release'],
    [`${m}nlua`, '12n', 'node-redis, script release'],
    [`${m}g`, '12g', 'GLIDE, native release'],
    [`${m}glua`, '12g', 'GLIDE, script release'],
  ];
  return runs
    .flatMap(([metric, scenario, what]): Row[] => {
      const label = `${scenario} ${name}, ${what}`;
      const peers = (figure: string): string | undefined => (metric === m ? undefined : `${m}.${figure}`);
      return [
        {
          label: `${label}: Redis CPU per cycle, µs`,
          metric: `${metric}.redisUs`,
          peers: peers('redisUs'),
          higherIsBetter: false,
          unit: 'µs',
        },
        { label: `${label}: serial`, metric: `${metric}.ops`, peers: peers('ops'), higherIsBetter: true, unit: 'k/s' },
        {
          label: `${label}: client CPU per serial cycle, µs`,
          metric: `${metric}.cpu`,
          peers: peers('cpu'),
          higherIsBetter: false,
          unit: 'µs',
        },
        {
          label: `${label}: 64 flows`,
          metric: `${metric}.flows`,
          peers: peers('flows'),
          higherIsBetter: true,
          unit: 'k/s',
        },
      ];
    })
    .concat(
      (
        [
          [`${m}b`, 'ioredis'],
          [`${m}nb`, 'node-redis'],
          [`${m}gb`, 'GLIDE'],
        ] as const
      ).flatMap(([metric, client]): Row[] => [
        {
          label: `12 ${name}, a bare ${client} SET, no lock: serial`,
          metric: `${metric}.ops`,
          higherIsBetter: true,
          unit: 'k/s',
        },
        {
          label: `12 ${name}, a bare ${client} SET, no lock: client CPU per command, µs`,
          metric: `${metric}.cpu`,
          higherIsBetter: false,
          unit: 'µs',
        },
      ]),
    );
}

function fmt(value: number | undefined, unit: Row['unit']): string {
  if (value === undefined || Number.isNaN(value)) return '—';
  if (unit === 'k/s') return `${(value / 1000).toFixed(1)}k`;
  if (unit === 'ms') return value.toFixed(2);
  if (unit === 'x') return value.toFixed(2);
  if (unit === '%') return `${value.toFixed(1)}%`;
  if (unit === 'µs') return value.toFixed(1);
  return value >= 100 ? value.toFixed(0) : value.toFixed(1);
}

function bestPeer(row: Row): { lib: string; value: number } | undefined {
  let best: { lib: string; value: number } | undefined;
  for (const lib of MAIN.slice(1)) {
    const v = med(row.peers ?? row.metric, lib);
    if (v === undefined || Number.isNaN(v)) continue;
    if (!best || (row.higherIsBetter ? v > best.value : v < best.value)) best = { lib, value: v };
  }
  return best;
}

function ratio(row: Row): string {
  const ours = med(row.metric, 'lockwarden');
  const best = bestPeer(row);
  if (ours === undefined || !best) return '—';
  if (row.unit === 'n' || row.unit === '%') {
    if (ours === 0) return best.value === 0 ? 'equal' : 'none vs some';
  }
  const r = row.higherIsBetter ? ours / best.value : best.value / ours;
  return `${r.toFixed(2)}× ${r >= 1 ? 'better' : 'worse'}`;
}

function renderTable(): string {
  const headers = ['scenario', ...MAIN, 'best peer', 'ours vs best peer'];
  const rows = ROWS.map((row) => [
    `${row.label} (${row.higherIsBetter ? 'higher' : 'lower'} is better)`,
    ...MAIN.map((lib) => fmt(med(lib === 'lockwarden' ? row.metric : (row.peers ?? row.metric), lib), row.unit)),
    bestPeer(row)?.lib ?? '—',
    ratio(row),
  ]);
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(headers), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

function checkTargets(): { text: string; ok: boolean }[] {
  const ours = (m: string): number => med(m, 'lockwarden') ?? NaN;
  const best = (m: string, higher: boolean): number =>
    bestPeer({ label: '', metric: m, higherIsBetter: higher, unit: 'x' })?.value ?? NaN;
  // Scenario 4 runs the tuned peers only.
  const bestMulti = (m: string): number => {
    const peers = MULTI.slice(1)
      .map((lib) => med(m, lib))
      .filter((v): v is number => v !== undefined && !Number.isNaN(v));
    return peers.length ? Math.max(...peers) : NaN;
  };
  return [
    ...(['s2', 's2f'] as const).map((m) => ({
      text: `2: 64-flow throughput ≥ 1.3× the best peer, ${m === 's2' ? 'names reused' : 'never-seen names'} (${(ours(`${m}.ops`) / best(`${m}.ops`, true)).toFixed(2)}×)`,
      ok: ours(`${m}.ops`) >= 1.3 * best(`${m}.ops`, true),
    })),
    {
      text: `1: p50 latency ≤ the best peer's (${(best('s1.p50', false) / ours('s1.p50')).toFixed(2)}×: ${ours('s1.p50').toFixed(3)} vs ${best('s1.p50', false).toFixed(3)} ms)`,
      ok: ours('s1.p50') <= best('s1.p50', false),
    },
    {
      text: `1: p50 latency ≤ 1.25× two PING round trips (${(ours('s1.p50') / (2 * (med('s1.ping', 'reference') ?? NaN))).toFixed(2)}×)`,
      ok: ours('s1.p50') <= 1.25 * 2 * (med('s1.ping', 'reference') ?? NaN),
    },
    ...redisWorkTargets(ours),
    ...(['s1', 's11'] as const).map((m) => ({
      text: `1: serial ≥ 1.0× the best peer, ${m === 's1' ? 'one name reused' : 'never-seen names'} (${(ours(`${m}.ops`) / best(`${m}.ops`, true)).toFixed(2)}×)`,
      ok: ours(`${m}.ops`) >= best(`${m}.ops`, true),
    })),
    {
      text: `3: hand-off p50 ahead of the best peer's (${ours('s3.handoffP50').toFixed(2)} vs ${best('s3.handoffP50', false).toFixed(2)} ms)`,
      ok: ours('s3.handoffP50') <= best('s3.handoffP50', false),
    },
    {
      text: `3: wait p99 ahead of the best peer's (${ours('s3.waitP99').toFixed(1)} vs ${best('s3.waitP99', false).toFixed(1)} ms)`,
      ok: ours('s3.waitP99') <= best('s3.waitP99', false),
    },
    {
      text: `10: permits ≥ 1.0× redis-semaphore (${(ours('s10.ops') / Math.max(med('s10.ops', 'semaphore') ?? NaN, med('s10.ops', 'semaphore tuned') ?? NaN)).toFixed(2)}×)`,
      ok: ours('s10.ops') >= Math.max(med('s10.ops', 'semaphore') ?? NaN, med('s10.ops', 'semaphore tuned') ?? NaN),
    },
    ...permitsAcrossTargets(ours),
    {
      text: `10: permits across processes held 2 ms ≥ 1.3× redis-semaphore (${(ours('s10mph.ops') / (med('s10mph.ops', 'semaphore tuned') ?? NaN)).toFixed(2)}×)`,
      ok: ours('s10mph.ops') >= 1.3 * (med('s10mph.ops', 'semaphore tuned') ?? NaN),
    },
    {
      text: `10: permits held 2 ms, fairness between processes ≥ 0.9 (${ours('s10mph.fair').toFixed(2)})`,
      ok: ours('s10mph.fair') >= 0.9,
    },
    {
      text: `4: utilisation across processes ≥ 1.4× the best peer (${(ours('s4.util') / bestMulti('s4.util')).toFixed(2)}×: ${ours('s4.util').toFixed(2)} vs ${bestMulti('s4.util').toFixed(2)})`,
      ok: ours('s4.util') >= 1.4 * bestMulti('s4.util'),
    },
    {
      text: `4: hand-off p50 across processes ≤ 1.2× within one process (${(ours('s4.handoffP50') / ours('s3.handoffP50')).toFixed(2)}×: ${ours('s4.handoffP50').toFixed(2)} vs ${ours('s3.handoffP50').toFixed(2)} ms)`,
      ok: ours('s4.handoffP50') <= 1.2 * ours('s3.handoffP50'),
    },
    {
      text: `11: no key left without a TTL (${ours('s11.forever').toFixed(0)} per 10 000 names)`,
      ok: ours('s11.forever') === 0,
    },
    { text: `3: utilisation ≥ 0.90 (${ours('s3.util').toFixed(2)})`, ok: ours('s3.util') >= 0.9 },
    { text: `3: wait p99 ≤ 50 ms (${ours('s3.waitP99').toFixed(1)} ms)`, ok: ours('s3.waitP99') <= 50 },
    { text: `3: hand-off p50 ≤ 1 ms (${ours('s3.handoffP50').toFixed(2)} ms)`, ok: ours('s3.handoffP50') <= 1 },
    { text: `5: fair-mode fairness ≥ 0.90 (${ours('s5.fair').toFixed(2)})`, ok: ours('s5.fair') >= 0.9 },
    { text: `7: ≤ 100 Redis calls per renewal round (${ours('s7.calls').toFixed(0)})`, ok: ours('s7.calls') <= 100 },
    { text: `7: renewing uses < 5% of a core (${ours('s7.cpu').toFixed(1)}%)`, ok: ours('s7.cpu') < 5 },
    { text: `8: @Locked overhead ≤ 5% (${ours('s8.overhead').toFixed(1)}%)`, ok: ours('s8.overhead') <= 5 },
    {
      text: `9: a crashed leader is replaced within its lease and a little (${ours('s9.crash').toFixed(0)} ms, lease ${LEADER_LEASE_MS} ms)`,
      ok: ours('s9.crash') <= LEADER_LEASE_MS * 1.05,
    },
    ...nativeTargets(ours, 'Valkey 9', 's12'),
    ...nativeTargets(ours, 'Redis 8.6', 's12r'),
    ...CFG.hotWaiters.flatMap((waiters) => hotTargets(ours, best, waiters)),
  ];
}

/**
 * Scenario 13 at `waiters` waiters: as fast as the best peer at no more Redis CPU per grant,
 * and still fair between processes (at 8 and 64 waiters) with half its wait p99.
 */
function hotTargets(
  ours: (m: string) => number,
  best: (m: string, higher: boolean) => number,
  waiters: number,
): { text: string; ok: boolean }[] {
  const m = `s13.${waiters}`;
  const at = `${waiters} waiters`;
  const rate = ours(`${m}.ops`) / best(`${m}.ops`, true);
  const cpu = ours(`${m}.cpu`) / best(`${m}.cpu`, false);
  const p99 = ours(`${m}.waitP99`) / best(`${m}.waitP99`, false);
  return [
    { text: `13: a hot lock, ${at}: grants ≥ 1.0× the best peer (${rate.toFixed(2)}×)`, ok: rate >= 1 },
    { text: `13: ${at}: Redis CPU per grant ≤ 1.0× the best peer's (${cpu.toFixed(2)}×)`, ok: cpu <= 1 },
    { text: `13: ${at}: wait p99 ≤ 0.5× the best peer's (${p99.toFixed(2)}×)`, ok: p99 <= 0.5 },
    ...(waiters <= 64
      ? [
          {
            text: `13: ${at}: fairness between processes ≥ 0.9 (${ours(`${m}.fair`).toFixed(2)})`,
            ok: ours(`${m}.fair`) >= 0.9,
          },
        ]
      : []),
  ];
}

/** Scenario 10 across processes, hold 0: redis-semaphore's rate (default or tuned) at no more Redis CPU, fair between processes. */
function permitsAcrossTargets(ours: (m: string) => number): { text: string; ok: boolean }[] {
  const peer = (metric: string, pick: (...v: number[]) => number): number =>
    pick(med(metric, 'semaphore') ?? NaN, med(metric, 'semaphore tuned') ?? NaN);
  const rate = ours('s10mp.ops') / peer('s10mp.ops', Math.max);
  const cpu = ours('s10mp.rcpu') / peer('s10mp.rcpu', Math.min);
  return [
    { text: `10: permits across processes ≥ 1.0× redis-semaphore (${rate.toFixed(2)}×)`, ok: rate >= 1 },
    {
      text: `10: permits across processes, Redis CPU per grant ≤ 1.0× redis-semaphore's (${cpu.toFixed(2)}×)`,
      ok: cpu <= 1,
    },
    {
      text: `10: permits across processes, fairness between processes ≥ 0.9 (${ours('s10mp.fair').toFixed(2)})`,
      ok: ours('s10mp.fair') >= 0.9,
    },
  ];
}

/**
 * On a server with its own compare-and-delete, when it was built: the native release against
 * redis-semaphore, and against the script release.
 */
function nativeTargets(
  ours: (m: string) => number,
  name: NativeServer['name'],
  m: string,
): { text: string; ok: boolean }[] {
  if (med(`${m}.redisUs`, 'lockwarden') === undefined) return [];
  const us = ours(`${m}.redisUs`) / (med(`${m}.redisUs`, 'semaphore') ?? NaN);
  const pairs: [string, string, string][] = [
    ['serial', `${m}.ops`, `${m}lua.ops`],
    ['64 flows', `${m}.flows`, `${m}lua.flows`],
    ['serial through node-redis', `${m}n.ops`, `${m}nlua.ops`],
    ['64 flows through node-redis', `${m}n.flows`, `${m}nlua.flows`],
    ['serial through GLIDE', `${m}g.ops`, `${m}glua.ops`],
    ['64 flows through GLIDE', `${m}g.flows`, `${m}glua.flows`],
  ];
  return [
    { text: `12: Redis CPU per cycle on ${name} ≤ 0.5× redis-semaphore's (${us.toFixed(2)}×)`, ok: us <= 0.5 },
    ...pairs.map(([what, native, lua]) => {
      const r = ours(native) / ours(lua);
      return { text: `12: ${what} on ${name}, native release ≥ 1.0× the script's (${r.toFixed(2)}×)`, ok: r >= 1 };
    }),
  ];
}

/** Redis CPU per uncontended cycle ≤ 1.1× redis-semaphore's, on a reused name and on never-seen ones. */
function redisWorkTargets(ours: (m: string) => number): { text: string; ok: boolean }[] {
  return (['s1', 's11'] as const).map((s) => {
    const theirs = med(`${s}.redisUs`, 'semaphore') ?? NaN;
    const r = ours(`${s}.redisUs`) / theirs;
    const what = s === 's1' ? 'one name reused' : 'never-seen names';
    return { text: `1: Redis CPU per cycle ≤ 1.1× redis-semaphore's, ${what} (${r.toFixed(2)}×)`, ok: r <= 1.1 };
  });
}

function updateBenchmarksMd(
  machine: string,
  table: string,
  targets: { text: string; ok: boolean }[],
  date: string,
): void {
  const path = resolve('BENCHMARKS.md');
  const body = [
    '<!-- bench:start (written by npm run bench) -->',
    `Latest run: ${date}, ${machine}. Raw figures: \`bench/results/${date}.json\`.`,
    '',
    table,
    '',
    ...targets.map((t) => `- ${t.ok ? '✔' : '✘'} ${t.text}`),
    '<!-- bench:end -->',
  ].join('\n');
  const current = readFileSync(path, 'utf8');
  writeFileSync(path, current.replace(/<!-- bench:start[\s\S]*?<!-- bench:end -->/, body));
}

async function serverVersion(url: string): Promise<string> {
  const c = new Redis(url);
  try {
    return /redis_version:(\S+)/.exec(await c.info('server'))?.[1] ?? 'unknown';
  } finally {
    c.disconnect();
  }
}

void LIBRARIES;

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
