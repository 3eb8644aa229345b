import { randomFillSync } from 'node:crypto';
import type { MutexKeys, RwKeys, SemKeys } from '../backend/lock-keys';
import type {
  LockStore,
  MutexHandOff,
  PermitHandOff,
  StoreAcquire,
  StoreRwAcquire,
  StoreSemAcquire,
} from '../backend/lock-store';
import { safetyMarginFor } from '../lease/lease';
import { LockBackendError, LockError } from '../../errors';

// What one acquire asks the store, as data: the wait loop sends it and withdraws it itself,
// so no callback goes back and forth between the granter and the loop.

/**
 * A waiter with a place on the server (a queued mutex waiter, or a waiting writer) keeps its
 * place for the engine's `placeMs` (default 1 s) and checks back every 30 % of it. A release
 * hands a queued mutex waiter the lock for 70 % of `placeMs` (or its lease, if shorter); a
 * waiter told of it extends that at once, and other engines' waiters are not told at all
 * (they check back when their refresh is due). So a waiter that dies holds the others up by
 * at most about `placeMs`: its place lapses, or the lock it was handed does and the next
 * waiter checks back within a refresh.
 */
function refreshFor(placeMs: number): number {
  return Math.floor(placeMs * 0.3);
}

function handoffFor(placeMs: number, leaseMs: number): number {
  return Math.min(leaseMs, Math.floor(placeMs * 0.7));
}

/** How the wait loop waits for one kind of lock. */
interface WaitShape {
  readonly key: string;
  /** The lock's low-cardinality name, for events. */
  readonly name: string;
  readonly channel: string;
  /** Grants arrive by waiter id from the first attempt (a fair mutex) instead of as wake-ups. */
  readonly fair: boolean;
  /**
   * Takes its place in the lock's queue with its first attempt, when it may wait at all: a
   * writer. Its first "busy" answer holds new readers back at once; a queue place taken only
   * with its second attempt (after it subscribed) would date from then, behind the readers it
   * held back meanwhile, who would then be handed the lock before it.
   */
  readonly queuesAtOnce: boolean;
  /** How often a waiter that always holds a place on the server (a waiting writer) checks back. */
  readonly refreshMs: number | undefined;
  /** How often a waiter checks back once it is queued, so its place does not lapse. */
  readonly queueRefreshMs: number | undefined;
  /** The lease a release hands a queued waiter the lock with (Infinity: no hand-off). */
  readonly handoffMs: number;
  /**
   * Mutexes on a store with a queue: a waiter takes its place with its second attempt (the
   * first, uncontended one is a plain SET), listens on its engine's inbox, and a release hands
   * the lock to the oldest live place. So the first attempt still barges, and no waiter
   * starves behind luckier processes.
   */
  readonly queues: boolean;
  /** How long before the hand-off lease ends a waiter stops trusting it (the safety margin of so short a lease). */
  readonly handoffMarginMs: number;
  /** Semaphores: lets a release of this process hand its permits off to this waiter. */
  readonly handOff?: PermitHandOff;
  /**
   * Mutexes that are not fair, where the store can: lets a release of this process hand the
   * lock off to this waiter. The engine's waiters then share one place in the queue, as a
   * semaphore's do, and wait in line while the lock is held here.
   */
  readonly mutexHandOff?: MutexHandOff;
  /** The new holder's secret owner token, drawn once per acquire. */
  readonly ownerToken: string;
}

/** One acquire's attempts: how its loop waits, and what each attempt asks the store. */
export type Attempt =
  | (WaitShape & {
      readonly kind: 'mutex';
      readonly ask: Omit<StoreAcquire, 'fair' | 'waiterId' | 'waited' | 'inbox' | 'seq'>;
    })
  | (WaitShape & { readonly kind: 'read' | 'write'; readonly ask: StoreRwAcquire })
  | (WaitShape & { readonly kind: 'permit'; readonly ask: StoreSemAcquire });

/** A mutex acquire; `store` says whether waiters may queue (and be handed the lock). */
export function mutexAttempt(
  keys: MutexKeys,
  req: { key: string; name: string; leaseMs: number; fair: boolean; fenced: boolean },
  store: LockStore,
  placeMs: number,
  /** The engine's `safetyMarginMs`, if set. */
  configuredMargin: number | undefined,
): Attempt {
  const ownerToken = newOwnerToken();
  const handoffMs = handoffFor(placeMs, req.leaseMs);
  const ask = { keys, ownerToken, leaseMs: req.leaseMs, placeMs, handoffMs, fenced: req.fenced };
  return {
    kind: 'mutex',
    key: req.key,
    name: req.name,
    channel: keys.channel,
    fair: req.fair,
    queuesAtOnce: false,
    refreshMs: undefined,
    queueRefreshMs: refreshFor(placeMs),
    handoffMs,
    queues: store.fairQueue,
    handoffMarginMs: safetyMarginFor(handoffMs, configuredMargin),
    ownerToken,
    // The ask has what a hand-off here needs (token, lease, fenced): no second object per acquire.
    mutexHandOff: store.mutexHandOffHere && !req.fair ? ask : undefined,
    ask,
  };
}

/**
 * One side of a read/write lock. Where the store can (one server or Cluster, no replicaAck), a
 * waiter that found the lock busy takes a place in the lock's queue with its next attempt, as
 * a mutex waiter does, and a release hands the lock to the oldest places: the readers at the
 * head together, or the writer at the head once no reader is left, each told on its engine's
 * inbox. Elsewhere a waiting writer keeps a place that holds new readers back, and a release
 * wakes every waiter to try.
 */
export function rwAttempt(
  keys: RwKeys,
  req: { key: string; name: string; leaseMs: number },
  kind: 'read' | 'write',
  heldWriteToken: string,
  writerPreference: boolean,
  store: LockStore,
  placeMs: number,
  /** The engine's `safetyMarginMs`, if set. */
  configuredMargin: number | undefined,
): Attempt {
  const ownerToken = newOwnerToken();
  const queues = store.rwQueue;
  const handoffMs = handoffFor(placeMs, req.leaseMs);
  return {
    kind,
    key: req.key,
    name: req.name,
    channel: keys.channel,
    fair: false,
    queuesAtOnce: queues && kind === 'write',
    refreshMs: kind === 'write' ? refreshFor(placeMs) : undefined,
    queueRefreshMs: queues ? refreshFor(placeMs) : undefined,
    handoffMs: queues ? handoffMs : Infinity,
    queues,
    handoffMarginMs: safetyMarginFor(handoffMs, configuredMargin),
    ownerToken,
    ask: {
      keys,
      ownerToken,
      leaseMs: req.leaseMs,
      kind,
      heldWriteToken,
      writerPreference,
      placeMs,
      handoffMs,
    },
  };
}

/**
 * `permits` of a semaphore. Where the store can (one server or Cluster, no replicaAck), a
 * waiter that found no room takes a place in the semaphore's queue, as a mutex waiter does: a
 * release hands its permits off to a parked waiter of its own process first, then hands what
 * is left to the oldest places that fit, telling only their engines. Elsewhere (the memory
 * backend, replicaAck) a release wakes one waiter per process for each permit, and a raised
 * limit wakes them all, and those that fit take their permits.
 */
export function permitAttempt(
  keys: SemKeys,
  req: { key: string; name: string; leaseMs: number },
  permits: number,
  initialLimit: number,
  store: LockStore,
  placeMs: number,
  /** The engine's `safetyMarginMs`, if set. */
  configuredMargin: number | undefined,
): Attempt {
  const ownerToken = newOwnerToken();
  const queues = store.permitHandOff;
  const handoffMs = handoffFor(placeMs, req.leaseMs);
  return {
    kind: 'permit',
    key: req.key,
    name: req.name,
    channel: keys.channel,
    fair: false,
    queuesAtOnce: false,
    refreshMs: undefined,
    queueRefreshMs: queues ? refreshFor(placeMs) : undefined,
    handoffMs: queues ? handoffMs : Infinity,
    queues,
    handoffMarginMs: safetyMarginFor(handoffMs, configuredMargin),
    ownerToken,
    handOff: store.permitHandOff ? { ownerToken, permits, leaseMs: req.leaseMs } : undefined,
    ask: { keys, ownerToken, leaseMs: req.leaseMs, permits, initialLimit, placeMs, handoffMs },
  };
}

/** Where a queued attempt stands within its acquire: its waiter id, its engine's inbox, and its number. */
export interface Place {
  readonly waiterId: string;
  readonly inbox: string;
  readonly seq: number;
}

/**
 * Sends one attempt, queued (fair) or not: the fencing token (>= 0, UNMINTED for a plain
 * grant) when granted, else -(ms worth waiting). `waited`: an earlier attempt found the lock busy.
 */
export function send(
  store: LockStore,
  attempt: Attempt,
  queued: boolean,
  place: Place,
  waited: boolean,
): Promise<number> {
  switch (attempt.kind) {
    case 'mutex':
      // Built field by field: a spread of `ask` here made 64 concurrent flows 40% slower
      // (the copy's shape makes every read of it in the store slow), measured A/B.
      return store.acquire({
        keys: attempt.ask.keys,
        ownerToken: attempt.ask.ownerToken,
        leaseMs: attempt.ask.leaseMs,
        placeMs: attempt.ask.placeMs,
        handoffMs: attempt.ask.handoffMs,
        fenced: attempt.ask.fenced,
        fair: queued,
        waiterId: place.waiterId,
        inbox: place.inbox,
        seq: place.seq,
        waited,
      });
    case 'read':
    case 'write':
      return store.rwAcquire(queued ? { ...attempt.ask, queued: place } : attempt.ask);
    case 'permit':
      return store.semAcquire(queued ? { ...attempt.ask, queued: place } : attempt.ask);
  }
}

/**
 * Entropy drawn from the OS in 4 KiB blocks: one syscall per 256 owner tokens
 * instead of one per acquisition (which showed as 8% of CPU under load).
 */
const POOL = Buffer.alloc(4096);
let offset = POOL.length;

function take(bytes: number): string {
  if (offset + bytes > POOL.length) {
    randomFillSync(POOL);
    offset = 0;
  }
  const hex = POOL.toString('hex', offset, offset + bytes);
  offset += bytes;
  return hex;
}

/** A fresh 128-bit owner token: one per acquisition, never per process or request. */
function newOwnerToken(): string {
  return take(16);
}

/** A public 64-bit id a fair waiter's grant is announced by, so the secret token never goes on a channel. */
export function newWaiterId(): string {
  return take(8);
}

/** A Redis call's failure, in the library's words. */
export async function wrapped<T>(key: string, action: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    throw err instanceof LockError ? err : new LockBackendError(key, action, err);
  }
}
