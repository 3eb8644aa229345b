import type { Semaphore } from 'lockwarden/core';

/**
 * `flows` concurrent flows taking turns among `sems` (objects of one semaphore, on different
 * engines), every fourth asking for two permits, each holding its permits across `roundTrip`
 * so that others run meanwhile. The most permits held at once, counted by the flows
 * themselves, and how many flows finished.
 */
export async function permitsAtOnce(
  sems: readonly Pick<Semaphore, 'withPermit'>[],
  flows: number,
  roundTrip: () => Promise<unknown>,
): Promise<{ peak: number; done: number }> {
  let inside = 0;
  let peak = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: flows }, (_, i) => {
      const permits = i % 4 === 0 ? 2 : 1;
      return sems[i % sems.length].withPermit(
        async () => {
          inside += permits;
          peak = Math.max(peak, inside);
          await roundTrip();
          inside -= permits;
          done++;
        },
        { permits, waitMs: 30_000 },
      );
    }),
  );
  return { peak, done };
}
