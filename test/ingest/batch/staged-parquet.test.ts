/**
 * The staged files pingroll writes from its staged rows (ingest/batch/staged-parquet.ts): DuckDB's
 * reader reads back every row's values, with the types, encodings, row groups and statistics the
 * writer says, Snappy or uncompressed; a part's rows are split by day, whatever the pieces it is read in.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DuckDBConnection } from '@duckdb/node-api';
import { openEngine, queryRows, sqlString } from '../../../lib/duckdb-engine.js';
import { rng } from '../../../tools/sample/access-log-generator.js';
import { STAGED_ROW_GROUP_ROWS, StagedParquetWriter } from '../../../ingest/batch/staged-parquet.js';
import { STAGED_FILE_COLUMNS, stagedIdKey, stagedRow } from '../../../ingest/staged-ping.js';
import type { PingRecord } from '../../../ingest/ping-record.js';
import { dayNumber, dayOf } from '../../../lib/utc-day.js';

const dir = mkdtempSync(join(tmpdir(), 'staged-parquet-'));
let db: DuckDBConnection;
beforeAll(async () => { db = await openEngine({ memoryLimitMb: 1024, threads: 2, tempDir: join(dir, 'spill') }); });
afterAll(() => {
  db?.closeSync();
  rmSync(dir, { recursive: true, force: true });
});

const T0 = Date.parse('2026-11-01T00:00:00Z');

/**
 * `n` pings: one source, 40 series (some with multi-byte letters), sessions, a unique UUID id (or
 * another id, or none), a unique natural key, a user or none, platforms and playheads with NULLs, a
 * few countries and agents, times over `days` days from T0.
 */
function sample(n: number, seed: number, days = 1, pad = 0): PingRecord[] {
  const r = rng(seed);
  const hex = (k: number): string => Array.from({ length: k }, () => Math.floor(r() * 16).toString(16)).join('');
  return Array.from({ length: n }, (_, i) => {
    const id = r() < 0.9 ? `${hex(8)}-${hex(4)}-${hex(4)}-${hex(4)}-${hex(12)}` : r() < 0.5 ? `id,"${i}"\n` : null;
    return {
      source: 's3', series: `série-${Math.floor(r() * 40)}`, episode: `e${Math.floor(r() * 300)}${'x'.repeat(pad)}`, session: `s${Math.floor(r() * 500)}`,
      user: r() < 0.3 ? null : `user-${Math.floor(r() * 200)}`, pingId: id, eventTimeMs: T0 + Math.floor(r() * days * 86_400_000), naturalKey: `r:${i}-${hex(12)}`,
      platform: r() < 0.2 ? null : ['web', 'ios', 'androidtv'][i % 3]!, pos: r() < 0.2 ? null : Math.floor(r() * 7200),
      country: ['GB', 'US', 'ZZ'][i % 3]!, os: 'Windows', deviceType: 'desktop', browser: i % 7 === 0 ? 'curl' : 'Chrome', agentRule: i % 7 === 0 ? 'bot_list' : null,
    };
  });
}

/** A staged file's row as DuckDB reads it back, from the ping. */
function expected(p: PingRecord): Record<string, unknown> {
  const key = stagedIdKey(p.pingId);
  return {
    source: p.source, series: p.series, episode: p.episode, session: p.session, user_id: p.user, ping_id: p.pingId, event_ms: BigInt(p.eventTimeMs),
    natural_key: p.naturalKey, platform: p.platform, pos: p.pos === null ? null : BigInt(p.pos), country: p.country, os: p.os, device_type: p.deviceType,
    browser: p.browser, agent_rule: p.agentRule, key_hi: key?.hi ?? null, key_lo: key?.lo ?? null,
  };
}

function partOf(name: string, pings: PingRecord[]): string {
  const file = join(dir, `${name}.rows`);
  writeFileSync(file, Buffer.concat(pings.map(stagedRow)));
  return file;
}

async function readBack(file: string): Promise<Array<Record<string, unknown>>> {
  return queryRows<Record<string, unknown>>(db, `SELECT * FROM read_parquet(${sqlString(file)}) ORDER BY natural_key`);
}

/** The rows read back are `want`, in order: compared as JSON lines (64,000 objects compared deeply take seconds), the first that differs shown. */
function expectRows(back: Array<Record<string, unknown>>, want: Array<Record<string, unknown>>, what = ''): void {
  const line = (r: Record<string, unknown>): string => JSON.stringify(r, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));
  const a = back.map(line), b = want.map(line);
  const k = a.findIndex((x, i) => x !== b[i]);
  if (k >= 0) expect(back[k], `${what} row ${k}`).toEqual(want[k]);
  expect(a.length, what).toBe(b.length);
}

const byKey = (a: PingRecord, b: PingRecord): number => (a.naturalKey < b.naturalKey ? -1 : a.naturalKey > b.naturalKey ? 1 : 0);

describe('the staged files pingroll writes', () => {
  for (const codec of ['uncompressed', 'snappy']) {
    it(`writes ${codec} what DuckDB reads back row for row, over row groups, with dictionaries where values repeat and statistics of the numbers`, async () => {
      const pings = sample(STAGED_ROW_GROUP_ROWS + 2_500, 7);
      const [written, ...more] = await new StagedParquetWriter(codec).write([partOf(`rows-${codec}`, pings)], join(dir, `rows-${codec}`));
      expect(more).toEqual([]);
      expect(written!.rows).toBe(pings.length);
      expectRows(await readBack(written!.file), [...pings].sort(byKey).map(expected));
      const f = sqlString(written!.file);
      const schema = await queryRows<{ name: string; type: string; converted_type: string | null }>(db, `SELECT name, type, converted_type FROM parquet_schema(${f}) WHERE type IS NOT NULL`);
      expect(schema.map((c) => [c.name, c.type, c.converted_type])).toEqual(STAGED_FILE_COLUMNS.map((c) => [c.name, c.type === 'BIGINT' ? 'INT64' : 'BYTE_ARRAY', c.type === 'BIGINT' ? null : 'UTF8']));
      const meta = await queryRows<{ row_group_id: bigint; path_in_schema: string; encodings: string; compression: string; stats_min_value: string | null; stats_max_value: string | null; stats_null_count: bigint; num_values: bigint }>(db,
        `SELECT row_group_id, path_in_schema, encodings, compression, stats_min_value, stats_max_value, stats_null_count, num_values FROM parquet_metadata(${f}) ORDER BY row_group_id, column_id`);
      expect(new Set(meta.map((m) => m.compression))).toEqual(new Set([codec.toUpperCase()]));
      expect([0, 1].map((g) => Number(meta.find((m) => Number(m.row_group_id) === g)!.num_values))).toEqual([STAGED_ROW_GROUP_ROWS, 2_500]);
      const enc = (name: string): string => meta.find((m) => m.path_in_schema === name)!.encodings;
      for (const name of ['source', 'series', 'session', 'user_id', 'platform', 'country', 'agent_rule']) expect(enc(name), name).toMatch(/RLE_DICTIONARY/);
      for (const name of ['ping_id', 'natural_key']) expect(enc(name), name).not.toMatch(/DICTIONARY/);
      // Each group's nulls, and the least and greatest of each number.
      for (const [g, group] of [pings.slice(0, STAGED_ROW_GROUP_ROWS), pings.slice(STAGED_ROW_GROUP_ROWS)].entries()) {
        for (const c of STAGED_FILE_COLUMNS) {
          const m = meta.find((x) => Number(x.row_group_id) === g && x.path_in_schema === c.name)!;
          const values = group.map((p) => expected(p)[c.name]);
          expect(Number(m.stats_null_count), `${c.name} in group ${g}`).toBe(values.filter((v) => v === null).length);
          if (c.type !== 'BIGINT') continue;
          const nums = values.filter((v): v is bigint => v !== null);
          expect(BigInt(m.stats_min_value!), `${c.name} in group ${g}`).toBe(nums.reduce((a, b) => (b < a ? b : a)));
          expect(BigInt(m.stats_max_value!), `${c.name} in group ${g}`).toBe(nums.reduce((a, b) => (b > a ? b : a)));
        }
      }
      // The day's filter prunes by the event time's statistics: a range outside them reads no row.
      expect(await queryRows(db, `SELECT count(*)::INT AS n FROM read_parquet(${f}) WHERE event_ms < ${T0}`)).toEqual([{ n: 0 }]);
    });
  }

  it('tells apart values of which one begins the other, each its own dictionary entry', async () => {
    // 200 values, each the one before it and a letter more, twice each: in a table of 1,024 places some
    // meet, and only their lengths and bytes tell them apart.
    const pings = sample(400, 3).map((p, i) => ({ ...p, series: 'a'.repeat((i % 200) + 1), naturalKey: `r:${String(i).padStart(4, '0')}` }));
    const [written] = await new StagedParquetWriter('uncompressed').write([partOf('prefixes', pings)], join(dir, 'prefixes'));
    const back = await queryRows<{ series: string }>(db, `SELECT series FROM read_parquet(${sqlString(written!.file)}) ORDER BY natural_key`);
    expect(back.map((r) => r.series)).toEqual(pings.map((p) => p.series));
    const [meta] = await queryRows<{ encodings: string }>(db, `SELECT encodings FROM parquet_metadata(${sqlString(written!.file)}) WHERE path_in_schema = 'series'`);
    expect(meta!.encodings).toMatch(/RLE_DICTIONARY/);
  });

  it('splits the rows of several parts by UTC day into a file a day, rows longer than a read included', async () => {
    // Three days, rows of about 1 KB: the first part is past the 16 MB a read takes, so its rows
    // straddle reads; days before 1970 floor as dayOf does.
    const first = sample(20_000, 5, 3, 900);
    const second = [...sample(30, 6, 2), ...[-1, -86_400_001].map((t, i) => ({ ...sample(1, 9 + i)[0]!, eventTimeMs: t }))];
    const written = await new StagedParquetWriter('snappy').write([partOf('days-1', first), partOf('days-2', second)], join(dir, 'days'));
    const all = [...first, ...second];
    const days = [...new Set(all.map((p) => dayNumber(dayOf(p.eventTimeMs))))].sort((a, b) => a - b);
    expect(written.map((w) => w.day).sort((a, b) => a - b)).toEqual(days);
    for (const w of written) {
      const mine = all.filter((p) => dayNumber(dayOf(p.eventTimeMs)) === w.day).sort(byKey);
      expect(w.rows).toBe(mine.length);
      expect(w.file).toBe(join(dir, `days-${w.day}.parquet`));
      expectRows(await readBack(w.file), mine.map(expected), `day ${w.day}`);
    }
  });

  it('writes a group of one row, and a column of one value in every row', async () => {
    const [one] = sample(1, 3);
    const [written] = await new StagedParquetWriter('uncompressed').write([partOf('one', [one!])], join(dir, 'one'));
    expect(await readBack(written!.file)).toEqual([expected(one!)]);
    // A group past the values a chunk looks at before it gives a dictionary up: the ids written PLAIN, every row as it was.
    const many = sample(4_000, 5);
    const [big] = await new StagedParquetWriter('uncompressed').write([partOf('many', many)], join(dir, 'many'));
    expectRows(await readBack(big!.file), [...many].sort(byKey).map(expected));
  });
});
