// Loaded with --import into a benchmarked process: writes its peak RSS (KiB) and wall time at exit.
import { writeFileSync } from 'node:fs';
const started = process.hrtime.bigint();
process.on('exit', () => {
  if (process.env.BENCH_REPORT) {
    writeFileSync(process.env.BENCH_REPORT, JSON.stringify({ maxRssKiB: process.resourceUsage().maxRSS, seconds: Number(process.hrtime.bigint() - started) / 1e9 }));
  }
});
