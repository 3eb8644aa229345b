// Imported first by a worker: with CLOCK_SKEW_MS set, this process's wall clock (Date, and
// so luxon and the cron package) runs that many ms ahead (or behind, when negative) of the
// machine's. Timers and Redis are untouched, as on a host whose clock has drifted.
const skew = Number(process.env.CLOCK_SKEW_MS ?? 0);
if (skew !== 0) {
  const RealDate = Date;
  class SkewedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(RealDate.now() + skew);
      else super(...(args as [number]));
    }
    static override now(): number {
      return RealDate.now() + skew;
    }
  }
  globalThis.Date = SkewedDate as DateConstructor;
}
export {};
