/** How long after a grant on a name this process tries its plain path: within the counter's life. */
const TRUST_MS = 50_000;
/** Names remembered at most; the oldest go first. A forgotten name only costs one script. */
const MAX_NAMES = 10_000;

/**
 * The fencing counters this process granted from lately, so likely still there: the plain
 * grant (fast-grant.ts) INCRs a counter but never seeds one, since only the server's own
 * clock may seed a token (a seed from this process's estimate of that clock can run ahead
 * of it, and a restart would then hand out lower tokens). A name not known here goes to a
 * script, which seeds from TIME. Being wrong costs a round trip, never a token: an INCR
 * that finds no counter falls back to fence-seed.lua.
 */
export class KnownCounters {
  private readonly until = new Map<string, number>();

  /** Whether a grant on `counter` was seen in the last TRUST_MS. */
  has(counter: string): boolean {
    const until = this.until.get(counter);
    if (until === undefined) return false;
    if (performance.now() < until) return true;
    this.until.delete(counter);
    return false;
  }

  /** A grant that went through `counter` (whose TTL a seed set a minute long) at `at`. */
  add(counter: string, at: number): void {
    this.until.delete(counter);
    this.until.set(counter, at + TRUST_MS);
    if (this.until.size > MAX_NAMES) this.until.delete(this.until.keys().next().value as string);
  }
}
