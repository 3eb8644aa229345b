/** Small statistics helpers for the benchmarks. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Runs `op` back to back for `ms` milliseconds (after a short warm-up) and returns ops/s and latencies. */
export async function timed(
  ms: number,
  op: () => Promise<unknown>,
): Promise<{ opsPerSec: number; latencies: number[] }> {
  const warmUntil = performance.now() + Math.min(200, ms / 5);
  while (performance.now() < warmUntil) await op();
  const latencies: number[] = [];
  const start = performance.now();
  const end = start + ms;
  while (performance.now() < end) {
    const t = performance.now();
    await op();
    latencies.push(performance.now() - t);
  }
  return { opsPerSec: (latencies.length * 1000) / (performance.now() - start), latencies };
}

/** Runs `flows` copies of `op` in loops for `ms` and returns total ops/s. */
export async function concurrent(ms: number, flows: number, op: (flow: number) => Promise<unknown>): Promise<number> {
  let count = 0;
  const end = performance.now() + ms;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: flows }, async (_, f) => {
      while (performance.now() < end) {
        await op(f);
        count++;
      }
    }),
  );
  return (count * 1000) / (performance.now() - start);
}
