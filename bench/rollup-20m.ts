/**
 * A big day through the rollup stage alone: `count` staged pings for one day, made by DuckDB with
 * realistic cardinalities (sessions of ~30 pings, 70% logged in, 3% duplicates by ping id, 400 series),
 * rolled up and written as Parquet by pingroll's own code. Run in its own process so its peak RSS is
 * its own. Usage: <staged.parquet> <day> <out dir> [count]
 */
import { loadConfig } from '../infra/config.js';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { writeParquet } from '../rollup/output-file.js';
import { TABLES } from '../rollup/rules.js';
import { openEngine, sqlString } from '../lib/duckdb-engine.js';
import { rollupDay } from '../rollup/engines/duckdb/day-rollup.js';
import { stagedSelectList } from '../ingest/staged-ping.js';

export async function makeStaged(file: string, day: string, count: number): Promise<void> {
  if (existsSync(file)) return;
  const engine = await openEngine({ tempDir: join(dirname(file), 'spill'), memoryLimitMb: loadConfig(process.env).memoryLimitMb });
  const day0 = Date.parse(`${day}T00:00:00Z`);
  await engine.run(`COPY (
    SELECT ${stagedSelectList({
      source: `'s3'`, series: `'s' || (i // 30 % 400)`, episode: `'e' || (i // 30 % 13)`, session: `'sess-' || (i // 30)`,
      user_id: `CASE WHEN (i // 30) % 10 < 7 THEN 'u' || ((i // 30) % 250000) END`,
      ping_id: `'p-' || (CASE WHEN i % 33 = 0 THEN i - 1 ELSE i END)`,
      event_ms: `${day0}::BIGINT + ((i // 30) * 7919 % 86400000 + (i % 30) * 60000) % 86400000`,
      natural_key: `'r:' || i`,
      platform: `['web', 'ios', 'android', 'roku', 'tvos'][(i // 30) % 5 + 1]`,
      pos: `(i % 30) * 60`,
      country: `['US', 'GB', 'DE', 'BR', 'ZZ'][(i // 30) % 5 + 1]`, os: `'iOS'`, device_type: `'mobile'`, browser: `'Mobile Safari'`, agent_rule: 'NULL',
    })}
    FROM range(${count}) t(i)) TO ${sqlString(file)} (FORMAT parquet, COMPRESSION zstd)`);
  engine.closeSync();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, day, out, count] = process.argv.slice(2) as [string, string, string, string | undefined];
  await makeStaged(file, day, Number(count ?? 20_000_000));
  if (process.env.BENCH_MAKE_ONLY) process.exit(0);
  await mkdir(out, { recursive: true });
  const engine = await openEngine({ tempDir: join(out, 'spill'), memoryLimitMb: loadConfig(process.env).memoryLimitMb });
  // BENCH_CATALOG=1: with an episode catalog of every series' episodes (completion figures), 20 to 40 minutes long.
  let catalogFile: string | null = null;
  if (process.env.BENCH_CATALOG) {
    catalogFile = join(out, 'episode-catalog.parquet');
    await engine.run(`COPY (SELECT 's' || s AS series_id, 'e' || e AS episode_id, (1200 + (s * 13 + e) % 11 * 120)::BIGINT AS duration_seconds
      FROM range(400) a(s), range(13) b(e)) TO ${sqlString(catalogFile)} (FORMAT parquet)`);
  }
  const rollup = await rollupDay(engine, day, [file], { s3: { ping: Number(count ?? 20_000_000) } }, { catalogFile });
  const files = [];
  for (const table of TABLES) files.push(await writeParquet(engine, `SELECT * FROM ${rollup.tables[table]}`, table, day, out));
  process.stdout.write(JSON.stringify({ pings: rollup.pings, duplicates: rollup.duplicates, rows: files.map((f) => f.rows) }) + '\n');
  engine.closeSync();
}
