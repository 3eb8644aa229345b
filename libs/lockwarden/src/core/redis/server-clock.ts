import type { RedisClient } from '../backend/lock-backend';

/** How long one reading of the server's clock is trusted before it is taken again. */
const REFRESH_MS = 30_000;

/**
 * The Redis server's clock in microseconds, estimated here from one TIME reading and this
 * process's monotonic clock, so a fast grant can seed a fencing counter without a script.
 *
 * A seed only has to be above the tokens its counter handed out before it expired, and a
 * counter lives a minute from the seed that created it: an estimate off by seconds still
 * keeps tokens rising. The monotonic clock keeps the estimate steady when this machine's
 * wall clock is stepped. Until the first reading arrives there is no estimate, and grants
 * take the scripted path.
 */
export class ServerClock {
  private offsetUs: number | undefined;
  private readAt = -Infinity;
  private reading = false;

  constructor(private readonly client: RedisClient) {}

  /** The server's time now in µs, as a decimal string; undefined until a reading arrived. */
  nowMicros(): string | undefined {
    const local = performance.now();
    if (local - this.readAt > REFRESH_MS) this.read();
    if (this.offsetUs === undefined) return undefined;
    return String(Math.floor((performance.timeOrigin + local) * 1000 + this.offsetUs));
  }

  /** One TIME call in the background; a failure leaves the last estimate (or none) in place. */
  private read(): void {
    if (this.reading) return;
    this.reading = true;
    const sent = performance.now();
    this.client
      .time()
      .then(([seconds, micros]) => {
        const received = performance.now();
        // The server read its clock somewhere in the round trip: the middle is the best guess.
        const local = (performance.timeOrigin + (sent + received) / 2) * 1000;
        this.offsetUs = Number(seconds) * 1_000_000 + Number(micros) - local;
        this.readAt = received;
      })
      .catch(() => undefined)
      .finally(() => {
        this.reading = false;
      });
  }
}
