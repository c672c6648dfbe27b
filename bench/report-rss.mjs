// Loaded with --import into a benchmarked process: writes its peak RSS (KiB) and wall time at exit.
import { writeFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
const started = process.hrtime.bigint();
// The heap's peak, sampled (V8 keeps no peak of its own).
let peakHeap = 0;
const sample = () => { peakHeap = Math.max(peakHeap, getHeapStatistics().used_heap_size); };
setInterval(sample, 50).unref();
process.on('exit', () => {
  if (process.env.BENCH_REPORT) {
    sample();
    const u = process.resourceUsage();
    writeFileSync(process.env.BENCH_REPORT, JSON.stringify({
      maxRssKiB: u.maxRSS, seconds: Number(process.hrtime.bigint() - started) / 1e9,
      cpuSeconds: (u.userCPUTime + u.systemCPUTime) / 1e6, peakHeapMiB: peakHeap / 2 ** 20,
    }));
  }
});
