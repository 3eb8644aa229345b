import { LockAbortedError, LockTimeoutError } from 'lockwarden/errors';
import type { LockHandle } from 'lockwarden/core';
import type { LockSpec } from '../../libs/lockwarden/src/core';
import { engineFactory } from '../harness/engines';
import { redisForFile } from '../harness/redis';

// LockEngine.lockAndRun: the one engine call a lock decorator makes. The engine calls the
// method itself, so what it reports has to tell a lock that was not granted from a method
// that failed: a queue job is put back only for the first.

const file = redisForFile();
const admin = () => file.admin;
const { engine, pair } = engineFactory(() => file.redis.url, 'locked-call');

const MUTEX: LockSpec = { kind: 'mutex', options: Object.freeze({ waitMs: 0 }) };

class Reports {
  readonly seen: number[] = [];
  async build(id: number): Promise<string> {
    this.seen.push(id);
    return `report ${id}`;
  }
}

describe('LockEngine.lockAndRun', () => {
  it('runs the method as written, with its this and arguments, holding every key, then releases them', async () => {
    const e = engine();
    const reports = new Reports();
    const granted: LockHandle[] = [];
    let heldInside: boolean[] = [];
    const method = async function (this: Reports, id: number): Promise<string> {
      heldInside = granted.map((h) => h.isHeld());
      return Reports.prototype.build.call(this, id);
    };
    const outcome = await e.lockAndRun(['a', 'b'], MUTEX, {
      method,
      self: reports,
      args: [7],
      onBusy: 'wait',
      granted,
    });
    expect(outcome).toEqual({ ran: true, value: 'report 7' });
    expect(reports.seen).toEqual([7]);
    expect(granted.map((h) => h.key)).toEqual(['a', 'b']);
    expect(heldInside).toEqual([true, true]);
    expect(granted.some((h) => h.isHeld())).toBe(false);
    expect(await admin().exists(`${e.options.keyPrefix}{a}`, `${e.options.keyPrefix}{b}`)).toBe(0);
  });

  it('skips without running when a key is busy and the call skips, and releases what it took', async () => {
    const [a, b] = pair();
    const held = await b.acquire('second');
    const reports = new Reports();
    const outcome = await a.lockAndRun(['first', 'second'], MUTEX, {
      method: Reports.prototype.build,
      self: reports,
      args: [1],
      onBusy: 'skip',
    });
    expect(outcome).toEqual({ ran: false });
    expect(reports.seen).toEqual([]);
    expect(await admin().exists(`${a.options.keyPrefix}{first}`)).toBe(0);
    await held.release();
  });

  it('says a busy lock is the reason it did not run, and rejects with the method\u2019s own error', async () => {
    const [a, b] = pair();
    const held = await b.acquire('busy');
    const busy = await a.lockAndRun(['busy'], MUTEX, {
      method: Reports.prototype.build,
      self: new Reports(),
      args: [1],
      onBusy: 'throw',
    });
    expect(busy.ran).toBe(false);
    expect(!busy.ran && busy.error).toBeInstanceOf(LockTimeoutError);
    await held.release();
    // The same error class thrown by the method is the method's, not a busy lock.
    const own = new LockTimeoutError('elsewhere', 5, undefined);
    const failing = async (): Promise<never> => {
      throw own;
    };
    await expect(
      a.lockAndRun(['busy'], MUTEX, { method: failing, self: null, args: [], onBusy: 'throw' }),
    ).rejects.toBe(own);
    expect(await admin().exists(`${a.options.keyPrefix}{busy}`)).toBe(0);
  });

  it('releases and does not run when the signal fired once the locks were granted', async () => {
    const e = engine();
    const controller = new AbortController();
    const reports = new Reports();
    const granted: LockHandle[] = [];
    // The grant is pushed before the engine looks at the signal again: abort right then.
    granted.push = (...handles: LockHandle[]): number => {
      controller.abort(new Error('the HTTP client went away'));
      return Array.prototype.push.apply(granted, handles);
    };
    const outcome = await e.lockAndRun(['gone'], MUTEX, {
      method: Reports.prototype.build,
      self: reports,
      args: [1],
      onBusy: 'wait',
      signal: controller.signal,
      granted,
    });
    expect(outcome.ran).toBe(false);
    const error = !outcome.ran ? outcome.error : undefined;
    expect(error).toBeInstanceOf(LockAbortedError);
    expect((error as Error).message).toContain('the HTTP client went away before the method could start');
    expect(reports.seen).toEqual([]);
    expect(granted[0].isHeld()).toBe(false);
    expect(await admin().exists(`${e.options.keyPrefix}{gone}`)).toBe(0);
  });

  it('holds the locks of a result that runs when subscribed until lateWork says its work is over', async () => {
    const e = engine();
    const granted: LockHandle[] = [];
    let finish!: () => void;
    const over = new Promise<void>((resolve) => (finish = resolve));
    const lazy = { subscribe: (): void => undefined };
    const outcome = await e.lockAndRun(['late'], MUTEX, {
      method: async () => lazy,
      self: null,
      args: [],
      onBusy: 'wait',
      granted,
      lateWork: (value) => ({ value: { wrapped: value }, over }),
    });
    expect(outcome).toEqual({ ran: true, value: { wrapped: lazy } });
    expect(granted[0].isHeld()).toBe(true);
    const released = new Promise<void>((resolve) => e.subscribe((ev) => ev.type === 'released' && resolve()));
    finish();
    await released;
    expect(granted[0].isHeld()).toBe(false);
  });
});
