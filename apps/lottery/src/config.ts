import { hostname } from 'node:os';
import { CronTime } from 'cron';
import { tickOf } from 'lockwarden';

/** Settings of one lottery instance, read from the environment. */
export interface LotteryConfig {
  /** Redis for the locks (REDIS_URL). */
  readonly redisUrl: string;
  /** Redis for users and draws (LOTTERY_DATA_URL, default: REDIS_URL). */
  readonly dataUrl: string;
  /** HTTP port (PORT, default 3000; 0 picks a free one). */
  readonly port: number;
  /** Address to listen on (HOST, default 0.0.0.0). */
  readonly host: string;
  /** This instance's name in locks, logs and results (INSTANCE_ID, default hostname:pid). */
  readonly instanceId: string;
  /** When scheduled draws run (LOTTERY_CRON, default noon every day). */
  readonly cron: string;
  /** How many eligible users to seed on first start (LOTTERY_USERS, default 1000). */
  readonly users: number;
  /** Demo only: how long a draw pretends to work, in ms (LOTTERY_DRAW_DELAY_MS, default 0). */
  readonly drawDelayMs: number;
  /** Lock lease in ms (LOTTERY_LEASE_MS, default 30000). */
  readonly leaseMs: number;
  /** Print machine-readable event lines on stdout, for the demo (LOTTERY_REPORT=1). */
  readonly report: boolean;
  /**
   * Who runs the scheduled draws (LOTTERY_SCHEDULER): 'lock' (default), every instance's
   * cron and a per-draw lock that one of them wins; or 'leader', only the elected leader's
   * cron, still through the same per-draw lock and fence. docs/leadership.md compares the two.
   */
  readonly scheduler: 'lock' | 'leader';
  /**
   * The prize office that winners are announced to (LOTTERY_PRIZE_OFFICE_URL, an http(s)
   * URL taking one POST per winner). Unset: winners are not announced.
   */
  readonly prizeOfficeUrl: string | undefined;
  /**
   * How many calls the prize office takes at once, across all instances
   * (LOTTERY_PRIZE_OFFICE_PERMITS, default 3): the permits of the `lottery:prize-office` semaphore.
   */
  readonly prizeOfficePermits: number;
}

export const DEFAULT_CRON = '0 0 12 * * *';
export const WINNERS = 10;

/** A bad setting in the environment; the message names the variable and what it accepts. */
export class LotteryConfigError extends Error {
  override name = 'LotteryConfigError';
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): LotteryConfig {
  const redisUrl = env.REDIS_URL;
  if (!redisUrl) throw new LotteryConfigError('REDIS_URL is required, e.g. REDIS_URL=redis://127.0.0.1:6379');
  checkUrl('REDIS_URL', redisUrl);
  const dataUrl = env.LOTTERY_DATA_URL ?? redisUrl;
  checkUrl('LOTTERY_DATA_URL', dataUrl);
  const instanceId = env.INSTANCE_ID;
  if (instanceId !== undefined && !/^[\w.:-]{1,64}$/.test(instanceId)) {
    throw new LotteryConfigError(
      `INSTANCE_ID must be 1-64 letters, digits or "._:-", got ${JSON.stringify(instanceId)}.`,
    );
  }
  const cron = env.LOTTERY_CRON ?? DEFAULT_CRON;
  try {
    new CronTime(cron);
  } catch (err) {
    throw new LotteryConfigError(
      `LOTTERY_CRON must be a cron expression such as "0 0 12 * * *" (noon) or "*/5 * * * * *", got ${JSON.stringify(cron)}: ${(err as Error).message}`,
    );
  }
  return {
    redisUrl,
    dataUrl,
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: env.HOST ?? '0.0.0.0',
    instanceId: instanceId ?? `${hostname()}:${process.pid}`,
    cron,
    users: integer(env, 'LOTTERY_USERS', 1000, WINNERS, 1_000_000),
    drawDelayMs: integer(env, 'LOTTERY_DRAW_DELAY_MS', 0, 0, 600_000),
    leaseMs: integer(env, 'LOTTERY_LEASE_MS', 30_000, 100, 600_000),
    report: env.LOTTERY_REPORT === '1',
    scheduler: scheduler(env.LOTTERY_SCHEDULER),
    prizeOfficeUrl: httpUrl('LOTTERY_PRIZE_OFFICE_URL', env.LOTTERY_PRIZE_OFFICE_URL),
    prizeOfficePermits: integer(env, 'LOTTERY_PRIZE_OFFICE_PERMITS', 3, 1, 1000),
  };
}

function scheduler(raw: string | undefined): LotteryConfig['scheduler'] {
  if (raw === undefined || raw === '' || raw === 'lock') return 'lock';
  if (raw === 'leader') return 'leader';
  throw new LotteryConfigError(`LOTTERY_SCHEDULER must be "lock" or "leader", got ${JSON.stringify(raw)}.`);
}

function httpUrl(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^https?:\/\/[^\s]+$/.test(raw)) {
    throw new LotteryConfigError(`${name} must be an http:// or https:// URL, got ${JSON.stringify(raw)}.`);
  }
  return raw;
}

function checkUrl(name: string, value: string): void {
  if (!/^rediss?:\/\/[^\s]+$/.test(value)) {
    throw new LotteryConfigError(`${name} must be a redis:// or rediss:// URL, got ${JSON.stringify(value)}.`);
  }
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    throw new LotteryConfigError(`${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}.`);
  }
  return value;
}

/**
 * The id of the scheduled draw of the tick a timer firing at `firedAt` serves: the time of
 * that tick, as Lockwarden names it (`currentTick().at` inside the run, `tickOf` outside).
 * Every instance names a tick alike whatever its clock skew, and an instance whose event
 * loop was blocked when the tick came still names the tick it is late for: a noon draw that
 * fires 3 s late is still today's draw.
 */
export function tickDrawId(cron: string, firedAt: Date): string {
  const tick = tickOf(cron, firedAt);
  if (!tick) {
    throw new LotteryConfigError(
      `The cron expression ${JSON.stringify(cron)} has no tick before ${firedAt.toISOString()}.`,
    );
  }
  return drawIdOf(tick);
}

/** The draw id of a tick. */
export function drawIdOf(tick: Date): string {
  return `tick-${tick.toISOString()}`;
}
