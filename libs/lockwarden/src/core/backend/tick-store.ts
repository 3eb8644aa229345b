import { mutexKeys } from './lock-keys';

/**
 * The Redis keys of one scheduled job, all under the job lock's `{hash tag}`: its lock (the
 * plain mutex), one record per tick (kept a while, then expired) and the run pointer, there
 * only while a run is going or was cut short.
 */
export interface TickKeys {
  readonly lock: string;
  readonly run: string;
  /** A tick an instance handed off while shutting down, for the job's next holder to run. */
  readonly handedOff: string;
  record(atMs: number): string;
}

export function tickKeys(prefix: string, job: string): TickKeys {
  const lock = mutexKeys(prefix, job).lock;
  return { lock, run: `${lock}:run`, handedOff: `${lock}:handed-off`, record: (at) => `${lock}:tick:${at}` };
}

/** What deciding a tick found: see tick-claim.lua. */
export type ClaimState = 'early' | 'taken' | 'claimed' | 'waiting' | 'overrun' | 'busy';

/** A run of the job, as its pointer records it. */
export interface RunPointer {
  /** The tick it runs. */
  readonly at: number;
  readonly fencingToken: number;
  readonly instanceId: string;
  /** The stored value, which only its own run may clear. */
  readonly raw: string;
}

export interface TickClaim {
  readonly state: ClaimState;
  /** `early`: how long until the server's clock reaches the tick. */
  readonly earlyMs: number;
  /** `taken`: the tick's record ("<state>|<instance>[|<token>]"). */
  readonly record: string;
  /** The job's run in progress (or cut short), when there is one. */
  readonly run: RunPointer | undefined;
  /** The instance holding the job's lock, when it is held ('' otherwise). */
  readonly holder: string;
}

export interface TickStart {
  readonly superseded: boolean;
  /** A run pointer found on starting: a run of the job that never finished. */
  readonly found: RunPointer | undefined;
  /** The pointer this run set, which settle() clears. */
  readonly pointer: string;
}

/** How a tick ended, as its record keeps it; 'handed-off' hands an unrun tick off (its record goes). */
export type TickOutcome = 'done' | 'failed' | 'overrun' | 'handed-off';

/** Where tick records and the run pointer live: one Redis (with a quorum, the first node), or memory. */
export interface TickStore {
  /** Decides tick `at`, once across all instances (tick-claim.lua). */
  claim(keys: TickKeys, at: number, keepMs: number, wait: boolean): Promise<TickClaim>;
  /** Starts the run of a claimed tick, its caller holding the job's lock (tick-start.lua). */
  start(keys: TickKeys, at: number, fencingToken: number, keepMs: number, nextAt?: number): Promise<TickStart>;
  /** Records how tick `at` ended and clears this run's pointer (tick-settle.lua). */
  settle(keys: TickKeys, at: number, outcome: TickOutcome, pointer?: string): Promise<void>;
  /** The tick an instance handed off while shutting down, if one waits for the job's holder. */
  handedOff(keys: TickKeys): Promise<number | undefined>;
  /** Claims handed-off tick `at` for the job's holder; false when it is gone or claimed since (tick-adopt.lua). */
  adopt(keys: TickKeys, at: number): Promise<boolean>;
}

export function parsePointer(raw: string): RunPointer | undefined {
  const m = /^(\d+)\|(\d+)\|(.*)$/.exec(raw);
  return m ? { at: Number(m[1]), fencingToken: Number(m[2]), instanceId: m[3], raw } : undefined;
}

export function pointerOf(at: number, fencingToken: number, instanceId: string): string {
  return `${at}|${fencingToken}|${instanceId}`;
}
