import { parsePointer, pointerOf } from '../backend/tick-store';
import type { TickClaim, TickKeys, TickOutcome, TickStart, TickStore } from '../backend/tick-store';

interface Entry {
  value: string;
  expiresAt: number;
}

/**
 * The tick scripts' operations on data in process memory, for LockTestingModule: the same
 * replies as tick-claim.lua, tick-start.lua and tick-settle.lua. The "server clock" is
 * this process's wall clock, which is what the records are compared with on Redis too.
 */
export class MemoryTickStore implements TickStore {
  constructor(
    private readonly entries: Map<string, Entry>,
    /** The instance holding a mutex, or undefined when it is free. */
    private readonly lockHolder: (lockKey: string) => string | undefined,
    private readonly instanceId: string,
  ) {}

  claim(keys: TickKeys, at: number, keepMs: number, wait: boolean): Promise<TickClaim> {
    const now = Date.now();
    const none = { earlyMs: 0, record: '', run: undefined, holder: '' };
    if (now < at) return Promise.resolve({ ...none, state: 'early', earlyMs: at - now });
    const record = this.get(keys.record(at));
    if (record !== undefined) return Promise.resolve({ ...none, state: 'taken', record });
    const run = this.get(keys.run) ?? '';
    const holder = this.lockHolder(keys.lock);
    const state = holder === undefined ? 'claimed' : wait ? 'waiting' : run ? 'overrun' : 'busy';
    this.entries.set(keys.record(at), { value: `${state}|${this.instanceId}`, expiresAt: now + keepMs });
    return Promise.resolve({ ...none, state, run: parsePointer(run), holder: holder ?? '' });
  }

  start(keys: TickKeys, at: number, fencingToken: number, keepMs: number, nextAt?: number): Promise<TickStart> {
    const found = parsePointer(this.get(keys.run) ?? '');
    const pointer = pointerOf(at, fencingToken, this.instanceId);
    if (nextAt !== undefined && this.get(keys.record(nextAt)) !== undefined) {
      this.replace(keys.record(at), `superseded|${this.instanceId}`);
      return Promise.resolve({ superseded: true, found, pointer });
    }
    this.entries.set(keys.run, { value: pointer, expiresAt: Date.now() + keepMs });
    this.replace(keys.record(at), `running|${this.instanceId}|${fencingToken}`);
    return Promise.resolve({ superseded: false, found, pointer });
  }

  settle(keys: TickKeys, at: number, outcome: TickOutcome, pointer?: string): Promise<void> {
    if (pointer !== undefined && this.get(keys.run) === pointer) this.entries.delete(keys.run);
    if (outcome === 'handed-off') {
      const [state, instance] = (this.get(keys.record(at)) ?? '').split('|');
      const unrun = state === 'claimed' || state === 'waiting' || state === 'running';
      const entry = this.entries.get(keys.record(at));
      if (instance === this.instanceId && unrun && entry) {
        this.entries.delete(keys.record(at));
        if (this.get(keys.handedOff) === undefined)
          this.entries.set(keys.handedOff, { value: String(at), expiresAt: entry.expiresAt });
      }
      return Promise.resolve();
    }
    this.replace(keys.record(at), `${outcome}|${this.instanceId}`);
    return Promise.resolve();
  }

  handedOff(keys: TickKeys): Promise<number | undefined> {
    const at = this.get(keys.handedOff);
    return Promise.resolve(at === undefined ? undefined : Number(at));
  }

  adopt(keys: TickKeys, at: number): Promise<boolean> {
    const entry = this.entries.get(keys.handedOff);
    if (this.get(keys.handedOff) !== String(at) || !entry) return Promise.resolve(false);
    this.entries.delete(keys.handedOff);
    if (this.get(keys.record(at)) !== undefined) return Promise.resolve(false);
    this.entries.set(keys.record(at), { value: `claimed|${this.instanceId}`, expiresAt: entry.expiresAt });
    return Promise.resolve(true);
  }

  private get(key: string): string | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt <= Date.now()) this.entries.delete(key);
    return this.entries.get(key)?.value;
  }

  /** SET XX KEEPTTL. */
  private replace(key: string, value: string): void {
    const entry = this.entries.get(key);
    if (entry && this.get(key) !== undefined) entry.value = value;
  }
}
