import { loadConfig, LotteryConfigError, tickDrawId } from './config';
import { pickWinners } from './pick-winners';

describe('lottery configuration', () => {
  const base = { REDIS_URL: 'redis://127.0.0.1:6380' };

  it('reads the defaults', () => {
    const c = loadConfig(base);
    expect(c).toMatchObject({ port: 3000, cron: '0 0 12 * * *', users: 1000, dataUrl: base.REDIS_URL });
    expect(c).toMatchObject({ prizeOfficeUrl: undefined, prizeOfficePermits: 3 });
  });

  it.each([
    [{}, /REDIS_URL is required/],
    [{ REDIS_URL: 'localhost:6379' }, /REDIS_URL must be a redis:\/\//],
    [{ ...base, PORT: 'http' }, /PORT must be a whole number from 0 to 65535, got "http"/],
    [{ ...base, PORT: '70000' }, /PORT must be a whole number/],
    [{ ...base, LOTTERY_CRON: 'at noon' }, /LOTTERY_CRON must be a cron expression/],
    [{ ...base, INSTANCE_ID: 'has spaces' }, /INSTANCE_ID must be/],
    [{ ...base, LOTTERY_USERS: '5' }, /LOTTERY_USERS must be a whole number from 10/],
    [
      { ...base, LOTTERY_PRIZE_OFFICE_URL: 'ftp://office' },
      /LOTTERY_PRIZE_OFFICE_URL must be an http:\/\/ or https:\/\/ URL/,
    ],
    [{ ...base, LOTTERY_PRIZE_OFFICE_PERMITS: '0' }, /LOTTERY_PRIZE_OFFICE_PERMITS must be a whole number from 1/],
  ])('rejects %p with a clear message', (env, message) => {
    expect(() => loadConfig(env as NodeJS.ProcessEnv)).toThrow(LotteryConfigError);
    expect(() => loadConfig(env as NodeJS.ProcessEnv)).toThrow(message);
  });

  it('gives every instance the same draw id for one tick, whatever its clock skew', () => {
    const early = tickDrawId('0 0 12 * * *', new Date('2026-11-22T12:00:00.004Z'));
    const late = tickDrawId('0 0 12 * * *', new Date('2026-11-22T12:00:01.700Z'));
    expect(early).toBe('tick-2026-11-22T12:00:00.000Z');
    expect(late).toBe(early);
  });

  it('names the tick an instance is late for, not the next one', () => {
    expect(tickDrawId('0 0 12 * * *', new Date('2026-11-22T12:00:03.000Z'))).toBe('tick-2026-11-22T12:00:00.000Z');
    expect(tickDrawId('0 0 12 * * *', new Date('2026-11-22T18:00:00.000Z'))).toBe('tick-2026-11-22T12:00:00.000Z');
    expect(tickDrawId('*/3 * * * * *', new Date('2026-11-22T12:00:05.400Z'))).toBe('tick-2026-11-22T12:00:03.000Z');
    expect(tickDrawId('*/3 * * * * *', new Date('2026-11-22T12:00:05.999Z'))).toBe('tick-2026-11-22T12:00:03.000Z');
  });
});

describe('pickWinners', () => {
  it('picks the requested number of distinct entries from the pool', () => {
    const pool = Array.from({ length: 50 }, (_, i) => `u${i}`);
    const winners = pickWinners(pool, 10);
    expect(new Set(winners).size).toBe(10);
    for (const w of winners) expect(pool).toContain(w);
  });

  it('refuses a pool smaller than the number of winners', () => {
    expect(() => pickWinners(['a', 'b'], 10)).toThrow(/cannot pick 10/);
  });
});
