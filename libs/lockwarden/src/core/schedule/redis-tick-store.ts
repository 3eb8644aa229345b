import type { RedisConnection } from '../redis/connection';
import { parsePointer, pointerOf } from '../backend/tick-store';
import type { ClaimState, TickClaim, TickKeys, TickOutcome, TickStart, TickStore } from '../backend/tick-store';
import { SCRIPTS } from '../redis/lua-script';

/** The tick store on Redis: three small scripts, each touching one job's keys. */
export class RedisTickStore implements TickStore {
  constructor(
    private readonly client: RedisConnection,
    private readonly instanceId: string,
  ) {}

  async claim(keys: TickKeys, at: number, keepMs: number, wait: boolean): Promise<TickClaim> {
    const [state, second, holder] = (await SCRIPTS.tickClaim.run(
      this.client,
      [keys.record(at), keys.run, keys.lock],
      [at, keepMs, this.instanceId, wait ? 'w' : ''],
    )) as [ClaimState, string | number, string | undefined];
    const text = String(second);
    return {
      state,
      earlyMs: state === 'early' ? Number(second) : 0,
      record: state === 'taken' ? text : '',
      run: state === 'early' || state === 'taken' ? undefined : parsePointer(text),
      holder: holder ?? '',
    };
  }

  async start(keys: TickKeys, at: number, fencingToken: number, keepMs: number, nextAt?: number): Promise<TickStart> {
    const k = [keys.run, keys.record(at)];
    if (nextAt !== undefined) k.push(keys.record(nextAt));
    const [state, found] = (await SCRIPTS.tickStart.run(this.client, k, [
      at,
      fencingToken,
      this.instanceId,
      keepMs,
    ])) as [string, string];
    return {
      superseded: state === 'superseded',
      found: parsePointer(String(found)),
      pointer: pointerOf(at, fencingToken, this.instanceId),
    };
  }

  async settle(keys: TickKeys, at: number, outcome: TickOutcome, pointer?: string): Promise<void> {
    const handedOff = outcome === 'handed-off';
    const k = pointer === undefined && !handedOff ? [keys.record(at)] : [keys.record(at), keys.run];
    if (handedOff) k.push(keys.handedOff);
    const args: (string | number)[] = [outcome, this.instanceId];
    if (pointer !== undefined || handedOff) args.push(pointer ?? '');
    if (handedOff) args.push(at);
    await SCRIPTS.tickSettle.run(this.client, k, args);
  }

  async handedOff(keys: TickKeys): Promise<number | undefined> {
    const at = await this.client.get(keys.handedOff);
    return at === null ? undefined : Number(at);
  }

  async adopt(keys: TickKeys, at: number): Promise<boolean> {
    const reply = await SCRIPTS.tickAdopt.run(this.client, [keys.handedOff, keys.record(at)], [at, this.instanceId]);
    return Number(reply) === 1;
  }
}
