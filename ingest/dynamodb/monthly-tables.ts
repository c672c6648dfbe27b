/**
 * The legacy monthly tables (contract §1b): named by a template (`pings_{yyyy}_{mm}`). A writer picked the
 * table by its own clock, so the first and last minutes of a month can sit in the neighbouring
 * month's table: the tables that can hold day D are D's month's, and on the first or last day of a
 * month the neighbour's too.
 */
import { DAY_MS } from '../../lib/utc-day.js';

/**
 * The tables' key schema (contract §1b): hash `ts_shard`, a time and a random shard token; range
 * `session_id`. Tables created by `tables rotate` get it, and the tests' tables too.
 */
export const PING_TABLE_KEYS = {
  AttributeDefinitions: [{ AttributeName: 'ts_shard', AttributeType: 'S' }, { AttributeName: 'session_id', AttributeType: 'S' }],
  KeySchema: [{ AttributeName: 'ts_shard', KeyType: 'HASH' }, { AttributeName: 'session_id', KeyType: 'RANGE' }],
} as const;

export interface MonthlyTable {
  name: string;
  /** YYYY-MM */
  month: string;
  /** First instant of the next month, epoch ms. */
  monthEndMs: number;
}

export function tableForMonth(template: string, year: number, month: number): MonthlyTable {
  const yyyy = String(year).padStart(4, '0'), mm = String(month).padStart(2, '0');
  return {
    name: template.replaceAll('{yyyy}', yyyy).replaceAll('{mm}', mm),
    month: `${yyyy}-${mm}`,
    monthEndMs: Date.UTC(year, month, 1),
  };
}

export function tablesForDay(template: string, day: string): MonthlyTable[] {
  const d = new Date(`${day}T00:00:00Z`);
  const y = d.getUTCFullYear(), m = d.getUTCMonth() + 1;
  const out = [tableForMonth(template, y, m)];
  if (d.getUTCDate() === 1) out.unshift(m === 1 ? tableForMonth(template, y - 1, 12) : tableForMonth(template, y, m - 1));
  const last = new Date(Date.UTC(y, m, 0)).getUTCDate();
  if (d.getUTCDate() === last) out.push(m === 12 ? tableForMonth(template, y + 1, 1) : tableForMonth(template, y, m + 1));
  return out;
}

/** The first day of a table's month: where an item without a readable time belongs (contract §5). */
export function firstDayOf(table: MonthlyTable): string {
  return `${table.month}-01`;
}

/**
 * A day of grace after the month ends before a table counts as closed: a writer whose clock ran
 * behind may still add items of the month's last minutes to it.
 */
export const CLOSE_GRACE_MS = DAY_MS;

/** When a table closes: nothing more can arrive after this instant (epoch ms). */
export function closedAt(table: MonthlyTable): number {
  return table.monthEndMs + CLOSE_GRACE_MS;
}

/** Whether the table was closed at `now`. */
export function isClosed(table: MonthlyTable, now: Date): boolean {
  return now.getTime() >= closedAt(table);
}
