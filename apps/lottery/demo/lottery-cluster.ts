import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { fencedWrite, PENDING_KEY, readDraw, USERS_KEY } from '../src/draw-store';
import type { DrawResult, RecordOutcome } from '../src/draw-store';
import { UNANNOUNCED_KEY } from '../src/prize-office';
import { PrizeOfficeServer } from './prize-office-server';

/** One line an instance reported (LOTTERY_REPORT=1). */
export interface InstanceEvent {
  readonly event: string;
  readonly t: number;
  readonly [field: string]: unknown;
}

/** One row of a round's report. */
export interface RoundRow {
  readonly instance: string;
  readonly action: string;
  readonly fencingToken: number | undefined;
  readonly ms: number;
}

export interface Round {
  readonly drawId: string;
  readonly rows: RoundRow[];
  readonly winners: string[];
}

export interface CrashRound extends Round {
  readonly victim: string;
  readonly victimToken: number;
  readonly takeoverToken: number;
  readonly lateWrite: RecordOutcome;
  /** When the dead holder's late write was tried (Date.now()). */
  readonly lateWriteAt: number;
}

export interface Verification {
  readonly draws: string[];
  readonly problems: string[];
}

export interface ClusterOptions {
  readonly redisUrl: string;
  readonly instances?: number;
  readonly cron?: string;
  readonly drawDelayMs?: number;
  readonly leaseMs?: number;
  readonly users?: number;
  /** LOTTERY_SCHEDULER: 'lock' (default) or 'leader'. */
  readonly scheduler?: 'lock' | 'leader';
  /** LOTTERY_PRIZE_OFFICE_PERMITS: how many calls the prize office takes at once (default 3). */
  readonly prizeOfficePermits?: number;
}

/** What the prize office saw when several draws announced their winners at once. */
export interface PrizeRound {
  readonly rows: RoundRow[];
  readonly drawIds: string[];
  /** Winners announced for those draws, each once. */
  readonly announced: number;
  /** The most calls the office had in flight at once, over the whole run so far. */
  readonly peak: number;
  readonly permits: number;
}

/** How long a round may take before it fails with a report; far above a healthy round's few seconds. */
const ROUND_DEADLINE_MS = 40_000;

/** A lottery app instance running as its own Node process. */
export class LotteryInstance {
  readonly events: InstanceEvent[] = [];
  port = 0;
  alive = true;
  killedAt: number | undefined;
  readonly exited: Promise<number | null>;
  private stderr = '';
  private readonly listeners = new Set<(e: InstanceEvent) => void>();

  constructor(
    readonly id: string,
    private readonly child: ChildProcess,
  ) {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!line.startsWith('LOTTERY ')) return;
      const event = JSON.parse(line.slice(8)) as InstanceEvent;
      this.events.push(event);
      for (const listener of [...this.listeners]) listener(event);
    });
    child.stderr!.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-4000)));
    this.exited = new Promise((done) =>
      child.once('exit', (code) => {
        this.alive = false;
        done(code);
      }),
    );
  }

  /** Calls `listener` with each event from now on; returns the unsubscribe. */
  onEvent(listener: (e: InstanceEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The last events and stderr, for a failure message. */
  describe(): string {
    const recent = this.events.slice(-8).map((e) => `    ${JSON.stringify(e)}`);
    return [
      `  ${this.id} (${this.alive ? 'alive' : 'exited'}), last events:`,
      ...recent,
      `  stderr: ${this.stderr.slice(-1500) || '(none)'}`,
    ].join('\n');
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** The first event (past or future) that matches; fails if the process exits first. */
  waitFor(match: (e: InstanceEvent) => boolean, what: string): Promise<InstanceEvent> {
    const seen = this.events.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolveEvent, reject) => {
      const stop = this.onEvent((e) => {
        if (!match(e)) return;
        stop();
        resolveEvent(e);
      });
      void this.exited.then(() =>
        reject(new Error(`instance ${this.id} exited before ${what}:\n${this.stderr || '(no output)'}`)),
      );
    });
  }

  /** Kills the process at once, as a crash would. */
  async kill(): Promise<void> {
    this.killedAt = Date.now();
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** Stops the process gracefully (SIGTERM), killing it if it does not exit in 10 s. */
  async stop(): Promise<void> {
    if (!this.alive) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/**
 * Three (or N) lottery instances on one Redis, and the rounds the demo and the
 * end-to-end test run against them. Every check is made from what Redis
 * recorded and what the instances reported, never from timing.
 */
export class LotteryCluster {
  private constructor(
    readonly instances: LotteryInstance[],
    private readonly data: Redis,
    readonly startedAt: number,
    /** The stand-in prize office every instance announces winners to. */
    readonly prizeOffice: PrizeOfficeServer,
    readonly prizeOfficePermits: number,
  ) {}

  static async start(options: ClusterOptions): Promise<LotteryCluster> {
    const count = options.instances ?? 3;
    const startedAt = Date.now();
    const prizeOffice = await PrizeOfficeServer.start();
    const permits = options.prizeOfficePermits ?? 3;
    const instances = Array.from({ length: count }, (_, i) => {
      const id = `lottery-${i + 1}`;
      const child = spawn(
        process.execPath,
        ['-r', resolve('tools/ts-register.cjs'), '-r', 'tsconfig-paths/register', resolve('apps/lottery/src/main.ts')],
        {
          env: {
            ...process.env,
            TS_NODE_PROJECT: resolve('tsconfig.json'),
            REDIS_URL: options.redisUrl,
            PORT: '0',
            HOST: '127.0.0.1',
            INSTANCE_ID: id,
            LOTTERY_CRON: options.cron ?? '*/5 * * * * *',
            LOTTERY_DRAW_DELAY_MS: String(options.drawDelayMs ?? 0),
            LOTTERY_LEASE_MS: String(options.leaseMs ?? 30_000),
            LOTTERY_USERS: String(options.users ?? 1000),
            LOTTERY_REPORT: '1',
            LOTTERY_SCHEDULER: options.scheduler ?? 'lock',
            LOTTERY_PRIZE_OFFICE_URL: prizeOffice.url,
            LOTTERY_PRIZE_OFFICE_PERMITS: String(permits),
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      return new LotteryInstance(id, child);
    });
    const cluster = new LotteryCluster(instances, new Redis(options.redisUrl), startedAt, prizeOffice, permits);
    try {
      await Promise.all(
        instances.map(async (instance) => {
          const ready = await instance.waitFor((e) => e.event === 'ready', 'it was ready');
          instance.port = Number(ready.port);
        }),
      );
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  get alive(): LotteryInstance[] {
    return this.instances.filter((i) => i.alive);
  }

  /** Waits for the next cron tick and reports what each instance did with it. */
  async scheduledRound(): Promise<Round> {
    return this.within(ROUND_DEADLINE_MS, 'a scheduled round', () => this.nextScheduledRound());
  }

  private async nextScheduledRound(): Promise<Round> {
    const since = Date.now();
    const instances = this.alive;
    const cronEvents = (i: LotteryInstance): InstanceEvent[] =>
      i.events.filter((e) => e.event === 'draw' && e.source === 'cron');
    // The first tick after `since` that every instance reported on. A process starved of CPU
    // can miss a tick altogether (its cron library skips a deadline missed by too much); that
    // tick is then not a round, and the next one is.
    const drawId = await this.once(() => {
      const [lead, ...rest] = instances.map((i) => cronEvents(i));
      const ids = lead.filter((e) => e.t >= since).map((e) => String(e.drawId));
      return ids.sort().find((id) => rest.every((events) => events.some((e) => e.drawId === id)));
    });
    const rows = instances.map((instance) => {
      const e = cronEvents(instance).find((x) => x.drawId === drawId)!;
      const action = e.action === 'failed' ? `failed: ${String(e.error)}` : String(e.action);
      return { instance: instance.id, action, fencingToken: e.fencingToken as number | undefined, ms: Number(e.ms) };
    });
    return { drawId, rows, winners: (await readDraw(this.data, drawId))?.winners ?? [] };
  }

  /** Resolves with the first defined value `check` gives, checking again on each event any instance reports. */
  private once<T>(check: () => T | undefined): Promise<T> {
    return new Promise((resolve) => {
      const attempt = (): void => {
        const value = check();
        if (value === undefined) return;
        for (const stop of stops) stop();
        resolve(value);
      };
      const stops = this.instances.map((i) => i.onEvent(attempt));
      attempt();
    });
  }

  /** Fires POST /draws/:id at every instance at the same moment. */
  async httpRound(drawId: string): Promise<Round> {
    const rows = await Promise.all(this.alive.map((instance) => this.post(instance, drawId)));
    return { drawId, rows: rows.map((r) => r.row), winners: (await readDraw(this.data, drawId))?.winners ?? [] };
  }

  /**
   * Fires POST /draws/<prefix>-<n> at each instance at the same moment, a different draw each:
   * every instance draws, and all announce their winners together, through the one semaphore.
   */
  async prizeRound(prefix: string): Promise<PrizeRound> {
    const alive = this.alive;
    const drawIds = alive.map((_, i) => `${prefix}-${i + 1}`);
    const rows = await Promise.all(alive.map((instance, i) => this.post(instance, drawIds[i])));
    const announced = drawIds.reduce((n, id) => n + this.prizeOffice.announced(id).length, 0);
    return {
      rows: rows.map((r) => r.row),
      drawIds,
      announced,
      peak: this.prizeOffice.peak,
      permits: this.prizeOfficePermits,
    };
  }

  /**
   * Kills the instance drawing `drawId` mid-draw. Another instance is refused
   * (409) while the dead holder's lease runs, takes over once it ends (honouring
   * Retry-After), and a late write with the dead holder's fencing token is refused.
   */
  async crashRound(drawId: string): Promise<CrashRound> {
    const [victim, heir, ...others] = this.alive;
    const started = Date.now();
    void this.post(victim, drawId).catch(() => undefined); // dies with the instance
    const drawing = await victim.waitFor((e) => e.event === 'drawing' && e.drawId === drawId, `drawing ${drawId}`);
    const victimToken = Number(drawing.fencingToken);
    await victim.kill();
    const rows: RoundRow[] = [
      { instance: victim.id, action: 'killed mid-draw', fencingToken: victimToken, ms: Date.now() - started },
    ];

    for (const other of others) rows.push((await this.post(other, drawId)).row);
    let takeoverToken = 0;
    for (let attempt = 0; attempt < 20 && takeoverToken === 0; attempt++) {
      const { row, retryAfterS } = await this.post(heir, drawId);
      if (row.action === 'drew') {
        takeoverToken = row.fencingToken ?? 0;
        rows.push({ ...row, action: 'took over, drew' });
        break;
      }
      rows.push({ ...row, action: `${row.action}, retry in ${retryAfterS}s` });
      // A scheduled tick may catch the draw up first (it was left pending); then that instance took over.
      const caughtUp = this.alive
        .flatMap((i) => i.events)
        .find((e) => e.event === 'draw' && e.drawId === drawId && e.action === 'drew');
      if (caughtUp) {
        takeoverToken = Number(caughtUp.fencingToken);
        const ms = Date.now() - started;
        rows.push({
          instance: String(caughtUp.instanceId),
          action: 'took over at a tick, drew',
          fencingToken: takeoverToken,
          ms,
        });
        break;
      }
      await sleep(retryAfterS * 1000); // an HTTP client honouring Retry-After
    }

    // The dead holder "wakes up" and writes with its old token: refused by the fenced write.
    const zombie: DrawResult = {
      drawId,
      winners: ['zombie'],
      instanceId: victim.id,
      fencingToken: victimToken,
      drawnAt: new Date().toISOString(),
    };
    const lateWriteAt = Date.now();
    const lateWrite = await fencedWrite(this.data, drawId, victimToken, 'record', zombie);
    rows.push({
      instance: `${victim.id} (late)`,
      action: `late write: ${lateWrite}`,
      fencingToken: victimToken,
      ms: Date.now() - started,
    });
    const winners = (await readDraw(this.data, drawId))?.winners ?? [];
    return { drawId, rows, winners, victim: victim.id, victimToken, takeoverToken, lateWrite, lateWriteAt };
  }

  /**
   * Waits until no draw is pending or unannounced (a crashed drawer's draw is
   * caught up at a later tick), then cross-checks every draw any instance
   * started: exactly one instance drew it, Redis holds exactly that result, with
   * 10 distinct eligible winners, and the prize office was told exactly those
   * winners, never with more calls at once than its permits.
   */
  async verify(): Promise<Verification> {
    return this.within(ROUND_DEADLINE_MS, 'verification', () => this.verifyNow());
  }

  private async verifyNow(): Promise<Verification> {
    await this.settleDrawsInFlight();
    const pending = await this.data.smembers(PENDING_KEY);
    const unannounced = await this.data.smembers(UNANNOUNCED_KEY);
    const reported = (drawId: string, what: string, match: (e: InstanceEvent) => boolean): Promise<InstanceEvent> =>
      Promise.any(this.alive.map((i) => i.waitFor((e) => e.drawId === drawId && match(e), `${what} ${drawId}`)));
    for (const drawId of pending)
      await reported(drawId, 'catching up', (e) => e.event === 'draw' && e.action === 'drew');
    for (const drawId of new Set([...pending, ...unannounced])) {
      await reported(drawId, 'announcing', (e) => e.event === 'announced' && e.error === undefined);
    }
    const started = new Set<string>();
    const drew = new Map<string, InstanceEvent[]>();
    for (const instance of this.instances) {
      for (const e of instance.events) {
        if (e.event === 'drawing') started.add(String(e.drawId));
        if (e.event === 'draw' && e.action === 'drew')
          drew.set(String(e.drawId), [...(drew.get(String(e.drawId)) ?? []), e]);
      }
    }
    const problems: string[] = [];
    for (const drawId of started) {
      const result = await readDraw(this.data, drawId);
      const by = drew.get(drawId) ?? [];
      if (!result) {
        problems.push(`${drawId}: no result recorded`);
        if (by.length !== 1) problems.push(`${drawId}: drawn ${by.length} times`);
        continue;
      }
      // An instance killed between recording its draw and reporting it drew it once without
      // a line to say so: Redis's fenced record names it, and it is no longer running.
      const diedAfterDrawing = by.length === 0 && this.instances.some((i) => i.id === result.instanceId && !i.alive);
      if (by.length !== 1 && !diedAfterDrawing) problems.push(`${drawId}: drawn ${by.length} times`);
      if (by[0] && (result.instanceId !== by[0].instanceId || result.fencingToken !== by[0].fencingToken)) {
        problems.push(`${drawId}: the recorded result is not the one ${String(by[0].instanceId)} drew`);
      }
      if (new Set(result.winners).size !== 10) problems.push(`${drawId}: not 10 distinct winners`);
      const eligible = await this.data.smismember(USERS_KEY, ...result.winners);
      if (eligible.some((x) => x !== 1)) problems.push(`${drawId}: a winner is not an eligible user`);
      const announced = this.prizeOffice.announced(drawId).sort();
      if (announced.join() !== [...result.winners].sort().join()) {
        problems.push(`${drawId}: the prize office was told ${announced.length} winners, not the 10 drawn`);
      }
    }
    if (this.prizeOffice.peak > this.prizeOfficePermits) {
      problems.push(`the prize office had ${this.prizeOffice.peak} calls at once, over its ${this.prizeOfficePermits}`);
    }
    return { draws: [...started].sort(), problems };
  }

  /**
   * Waits until no live instance is in the middle of a draw. The cron keeps ticking while
   * the draws are checked: a draw caught between its start and its outcome has its result in
   * Redis already but not yet its outcome line, and would read as drawn 0 times.
   */
  private async settleDrawsInFlight(): Promise<void> {
    // A draw that fails without an outcome line (a route that threw) must not stall the check.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const inFlight = this.alive.flatMap((instance) =>
        instance.events
          .filter((e) => e.event === 'drawing')
          .map((e) => String(e.drawId))
          .filter((drawId) => !instance.events.some((e) => e.event === 'draw' && e.drawId === drawId))
          .map((drawId) =>
            instance
              .waitFor((e) => e.event === 'draw' && e.drawId === drawId, `the outcome of ${drawId}`)
              .catch(() => undefined),
          ),
      );
      const left = deadline - Date.now();
      if (inFlight.length === 0 || left <= 0) return;
      const timer = new AbortController(); // cancelled after, so it never holds the process open
      await Promise.race([
        Promise.all(inFlight),
        sleep(left, undefined, { signal: timer.signal }).catch(() => undefined),
      ]);
      timer.abort();
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.instances.map((i) => i.stop()));
    this.data.disconnect();
    await this.prizeOffice.stop();
  }

  /**
   * Runs a round, failing with what every instance reported if it does not end
   * in time, so a stuck round explains itself instead of hitting a bare test timeout.
   */
  private async within<T>(ms: number, what: string, round: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(`${what} did not end within ${ms} ms:\n${this.instances.map((i) => i.describe()).join('\n')}`),
          ),
        ms,
      );
    });
    try {
      return await Promise.race([round(), expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async post(instance: LotteryInstance, drawId: string): Promise<{ row: RoundRow; retryAfterS: number }> {
    const started = Date.now();
    const res = await fetch(instance.url(`/draws/${encodeURIComponent(drawId)}`), { method: 'POST' });
    const body = (await res.json().catch(() => ({}))) as Partial<DrawResult>;
    const action =
      res.status === 201
        ? 'drew'
        : res.status === 409
          ? '409 busy'
          : res.status === 200
            ? 'already drawn'
            : `HTTP ${res.status}`;
    return {
      row: { instance: instance.id, action, fencingToken: body.fencingToken, ms: Date.now() - started },
      retryAfterS: Number(res.headers.get('retry-after') ?? '1'),
    };
  }
}
