/**
 * The reliability soak (not a test: it takes minutes): `node dist/bench/soak.js [KILLS] [ROUNDS]`.
 * - KILLS runs killed (SIGKILL) at seeded random instants, each followed by one normal run, compared
 *   row for row (Parquet, warehouse, manifest) with a clean run;
 * - ROUNDS rounds of three runs started at once on one output (each killed or not at random): no two
 *   ever both hold the lock, every one ends in 0 or 3 (or killed), and the day ends exact;
 * - a corrupt object among the logs: every run exits 4, and the day is exact over the rest.
 * Prints the figures, and exits 1 if any run came out inexact.
 */
import { cp, writeFile } from 'node:fs/promises';
import { isDeepStrictEqual } from 'node:util';
import { join } from 'node:path';
import { generateSample, rng } from '../tools/sample/access-log-generator.js';
import { rm, tempDir, writeObjects } from '../test/support/job-fixture.js';
import { inFlight, publishedDay, runCli } from '../test/support/kill-run.js';

const DAY = '2026-11-01';

async function main(): Promise<void> {
  const kills = Number(process.argv[2] ?? 200), rounds = Number(process.argv[3] ?? 30);
  const base = tempDir('pingroll-soak-');
  const rand = rng(7);
  try {
    const sample = generateSample({ date: DAY, sessions: 150, seed: 53, recordsPerObject: 150, lateShare: 0.1 });
    await writeObjects(join(base, 'template', 'logs'), sample.objects);
    await cp(join(base, 'template'), join(base, 'clean'), { recursive: true });
    let started = Date.now();
    if (await runCli(join(base, 'clean'), DAY, null) !== 0) throw new Error('the clean run failed');
    const cleanMs = Date.now() - started;
    const clean = await publishedDay(join(base, 'clean'), DAY);

    const exact = async (root: string): Promise<boolean> => isDeepStrictEqual(await publishedDay(root, DAY), clean) && (await inFlight(root)).length === 0;
    let killed = 0, finished = 0, repaired = 0;
    started = Date.now();
    for (let k = 0; k < kills; k++) {
      const root = join(base, `kill-${k}`);
      await cp(join(base, 'template'), root, { recursive: true });
      if (await runCli(root, DAY, Math.floor(rand() * cleanMs * 1.1)) === 'killed') killed++;
      else finished++;
      if (await runCli(root, DAY, null) === 0 && await exact(root)) repaired++;
      await rm(root, { recursive: true, force: true });
      if ((k + 1) % 20 === 0) process.stderr.write(`kills: ${k + 1}/${kills}\n`);
    }
    const killSeconds = (Date.now() - started) / 1000;

    const codes = new Map<string, number>();
    let exactRounds = 0;
    for (let r = 0; r < rounds; r++) {
      const root = join(base, `round-${r}`);
      await cp(join(base, 'template'), root, { recursive: true });
      const results = await Promise.all([0, 1, 2].map(() => runCli(root, DAY, rand() < 0.3 ? Math.floor(rand() * cleanMs * 1.5) : null)));
      for (const c of results) codes.set(String(c), (codes.get(String(c)) ?? 0) + 1);
      if (await runCli(root, DAY, null) === 0 && await exact(root)) exactRounds++;
      await rm(root, { recursive: true, force: true });
    }

    // A corrupt object: every run completes with exit 4, and the day is exact over the rest.
    const bad = join(base, 'bad');
    await cp(join(base, 'template'), bad, { recursive: true });
    await writeFile(join(bad, 'logs', '2026-11-01-12-00-00-CORRUPT.gz'), Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0]), Buffer.alloc(300, 9)]));
    const badCodes = [await runCli(bad, DAY, null), await runCli(bad, DAY, Math.floor(rand() * cleanMs)), await runCli(bad, DAY, null)];
    const badExact = await exact(bad);

    const lines = [
      `soak: a day of ${sample.records.toLocaleString('en')} records in ${sample.objects.length} objects; a clean run takes ${cleanMs} ms`,
      '',
      '| what | runs | came out exact |',
      '|---|---:|---:|',
      `| killed at a random instant (${killed} inside the run, ${finished} after it finished), then one normal run | ${kills} | ${repaired} |`,
      `| three runs at once on one output, some killed, then one normal run (exit codes: ${[...codes].map(([c, n]) => `${c} x${n}`).join(', ')}) | ${rounds} rounds | ${exactRounds} |`,
      `| a corrupt gzip among the logs (exit codes ${badCodes.join(', ')}; 4 = completed, object quarantined) | 3 | ${badExact ? 'yes' : 'no'} |`,
      '',
      `${kills} kill-and-repair pairs in ${killSeconds.toFixed(0)} s`,
    ];
    process.stdout.write(lines.join('\n') + '\n');
    const concurrencyOk = [...codes.keys()].every((c) => c === '0' || c === '3' || c === 'killed');
    if (repaired !== kills || exactRounds !== rounds || !badExact || !concurrencyOk || badCodes[0] !== 4 || badCodes[2] !== 4) process.exitCode = 1;
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
