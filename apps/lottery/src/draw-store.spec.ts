import type { Redis } from 'ioredis';
import { startRedis } from '../../../test/harness/redis';
import type { RedisTarget } from '../../../test/harness/redis';
import { drawKeys, fencedWrite, readDraw } from './draw-store';
import type { DrawResult } from './draw-store';

let redis: RedisTarget;
let data: Redis;

beforeAll(async () => {
  redis = await startRedis({ own: true });
  data = redis.client();
});

afterAll(async () => {
  await data.quit();
  await redis.stop();
});

const result = (drawId: string, fencingToken: number): DrawResult => ({
  drawId,
  winners: [`w${fencingToken}`],
  instanceId: `i${fencingToken}`,
  fencingToken,
  drawnAt: new Date(0).toISOString(),
});

describe('the fenced record script', () => {
  it('lets the newer token win, even when the older one writes first', async () => {
    expect(await fencedWrite(data, 'd1', 5, 'claim')).toBe('claimed');
    expect(await fencedWrite(data, 'd1', 6, 'claim')).toBe('claimed'); // the old holder's lock lapsed
    expect(await fencedWrite(data, 'd1', 5, 'record', result('d1', 5))).toBe('stale');
    expect(await fencedWrite(data, 'd1', 6, 'record', result('d1', 6))).toBe('recorded');
    expect((await readDraw(data, 'd1'))?.fencingToken).toBe(6);
  });

  it('rejects an older token', async () => {
    expect(await fencedWrite(data, 'd2', 9, 'record', result('d2', 9))).toBe('recorded');
    expect(await fencedWrite(data, 'd2', 8, 'record', result('d2', 8))).toBe('stale');
    expect(await fencedWrite(data, 'd2', 8, 'claim')).toBe('stale');
    expect((await readDraw(data, 'd2'))?.fencingToken).toBe(9);
  });

  it('rejects a duplicate: a draw is recorded once, whatever the token', async () => {
    expect(await fencedWrite(data, 'd3', 1, 'record', result('d3', 1))).toBe('recorded');
    expect(await fencedWrite(data, 'd3', 2, 'claim')).toBe('duplicate');
    expect(await fencedWrite(data, 'd3', 3, 'record', result('d3', 3))).toBe('duplicate');
    expect((await readDraw(data, 'd3'))?.fencingToken).toBe(1);
  });

  it('keeps both keys of a draw in one hash slot', () => {
    const [resultKey, fenceKey] = drawKeys('x');
    const tag = (k: string): string => k.slice(k.indexOf('{') + 1, k.indexOf('}'));
    expect(tag(resultKey)).toBe(tag(fenceKey));
  });
});
