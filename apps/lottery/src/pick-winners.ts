import { randomInt } from 'node:crypto';

/** `count` distinct entries of `pool`, by a Fisher-Yates shuffle driven by the OS's CSPRNG. */
export function pickWinners(pool: readonly string[], count: number): string[] {
  if (pool.length < count) throw new Error(`Only ${pool.length} eligible users, cannot pick ${count} winners.`);
  const a = [...pool];
  // Only the first `count` places are needed: a partial shuffle is just as uniform.
  for (let i = 0; i < count; i++) {
    const j = randomInt(i, a.length);
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a.slice(0, count);
}
