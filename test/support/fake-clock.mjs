// Loaded with --import into a benchmarked pingroll process: its clock starts at BENCH_CLOCK_MS (epoch
// ms) and runs at the real rate from there. The scale bench replays a past day's delivery as if it
// were happening now, so that listing windows, which follow the clock, cover what they would.
const start = Number(process.env.BENCH_CLOCK_MS);
if (Number.isFinite(start)) {
  const RealDate = Date;
  const offset = start - RealDate.now();
  const now = () => RealDate.now() + offset;
  class BenchDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(now());
      else super(...args);
    }
    static now() {
      return now();
    }
  }
  globalThis.Date = BenchDate;
}
