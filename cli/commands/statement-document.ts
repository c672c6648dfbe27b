/**
 * The licensors' statement as a document a finance team can hand over: the same content in each form
 * `report --month` writes (a text table, CSV, JSON; the HTML month page shows it too):
 *
 * - a header: the month, its zone, whether it is closed (its version and when it was issued) or open
 *   (figures so far), the version of pingroll that wrote the document, where the figures come from,
 *   and the precision of the shares;
 * - a row per series and the total;
 * - the adjustments to earlier months reported on it, each with the closed month, zone and UTC day it
 *   belongs to, and their total;
 * - for a closed month, its versions: when each was issued, why (a reopen's reason), and what changed
 *   from the one before (series, figure, from, to).
 *
 * Pure: report.ts reads the warehouse and the close's record; this shapes and writes them.
 */
import { csvText } from '../csv-text.js';
import type { StatementVersion } from '../../state/closes.js';
import { UTC, utcDaysOfLocalMonth } from '../../lib/time-zone.js';

/** Shares are written as a percent of the month's minutes, to this many decimals. */
export const SHARE_DECIMALS = 4;
export const SHARE_MEANING = `percent of the month's minutes watched, rounded to ${SHARE_DECIMALS} decimals`;

/** A series' row as the warehouse gives it: share 0 to 1; pings null where the source has none (a zone's month so far). */
export interface StatementRow { series_id: string; minutes_watched: number; share_of_month: number; pings: number | null; days_watched: number }

/** A closed month's statement, as the warehouse holds it (monthly_statements): its version and when it was issued. */
export interface ClosedStatement { version: number; closedAt: string }

/** Late pings of a closed month reported on this statement (statement_adjustments), per closed month, UTC day and series. */
export interface AdjustmentRow { closed_month: string; tz: string; day: string; series_id: string; pings: number; minutes_watched: number }

/** A figure a version changed from the one before (the close's record: state/closes.ts). */
export type VersionChange = NonNullable<StatementVersion['changed']>[number];

/**
 * One issued version: when, why (a reopen's reason; null for the first close) and what changed from
 * the version before (empty for the first). `unrecorded` says why the reason and the changes are not
 * known (the close's record could not be read); they are null then.
 */
export interface VersionEntry extends Omit<StatementVersion, 'changed'> { changed: VersionChange[] | null; unrecorded?: string }

/** How complete the month's UTC days were when published (from daily_runs). */
export interface MonthCompleteness { days: number; complete: number; missing: string[]; provisional: string[]; incomplete: string[] }

export interface StatementParts {
  month: string;
  tz: string;
  source: string;
  codeVersion: string;
  rows: StatementRow[];
  closed: ClosedStatement | null;
  adjustments: AdjustmentRow[];
  versions: VersionEntry[];
  completeness: MonthCompleteness | null;
  notes?: string[];
}

export interface DocumentRow { series_id: string; minutes_watched: number; share_percent: string; pings: number | null; days_watched: number }

export interface StatementDocument {
  header: { month: string; tz: string; status: 'closed' | 'open'; version: number | null; closedAt: string | null; codeVersion: string; source: string; share: string };
  rows: DocumentRow[];
  /** Pings null when a row has none. Share: 100 to the stated precision (the rows' rounded shares may add up to a little more or less). */
  total: { series: number; minutes_watched: number; share_percent: string | null; pings: number | null };
  adjustments: AdjustmentRow[];
  adjustmentsTotal: { minutes_watched: number; pings: number };
  versions: VersionEntry[];
  completeness: MonthCompleteness | null;
  /** The completeness in a sentence (an open month). */
  completenessLine: string | null;
  notes: string[];
}

const percent = (share: number): string => (share * 100).toFixed(SHARE_DECIMALS);

/** The document of a month's statement, from what report.ts read. */
export function statementDocument(p: StatementParts): StatementDocument {
  const sum = (xs: Array<number | null>): number | null => (xs.some((x) => x === null) ? null : xs.reduce<number>((n, x) => n + x!, 0));
  const adjustments = p.adjustments.map((a) => ({ ...a, closed_month: a.closed_month.slice(0, 7) }));
  return {
    header: {
      month: p.month, tz: p.tz, status: p.closed ? 'closed' : 'open', version: p.closed?.version ?? null, closedAt: p.closed?.closedAt ?? null,
      codeVersion: p.codeVersion, source: p.source, share: SHARE_MEANING,
    },
    rows: p.rows.map((r) => ({ series_id: r.series_id, minutes_watched: r.minutes_watched, share_percent: percent(r.share_of_month), pings: r.pings, days_watched: r.days_watched })),
    total: { series: p.rows.length, minutes_watched: sum(p.rows.map((r) => r.minutes_watched))!, share_percent: p.rows.length ? percent(1) : null, pings: sum(p.rows.map((r) => r.pings)) },
    adjustments,
    adjustmentsTotal: { minutes_watched: adjustments.reduce((n, a) => n + a.minutes_watched, 0), pings: adjustments.reduce((n, a) => n + a.pings, 0) },
    versions: p.closed ? p.versions : [],
    completeness: p.closed ? null : p.completeness,
    completenessLine: !p.closed && p.completeness ? completenessLine(p.month, p.tz, p.completeness) : null,
    notes: p.notes ?? [],
  };
}

/** Whether every UTC day of an open month so far is published complete, and which are not. */
export function completenessLine(month: string, tz: string, c: MonthCompleteness): string {
  const { from, to } = utcDaysOfLocalMonth(month, tz);
  // A month in a zone is made of the UTC days that hold its minutes: the days its close checks.
  const of = tz === UTC ? `days of ${month}` : `UTC days that hold ${month} in ${tz} (${from} to ${to})`;
  return c.missing.length === 0 && c.incomplete.length === 0 && c.provisional.length === 0
    ? `All ${c.days} ${of} so far are published complete.`
    : `Not final: ${c.complete} of ${c.days} ${of} so far are published complete;`
      + `${c.missing.length ? ` not published: ${c.missing.join(', ')};` : ''}`
      + `${c.provisional.length ? ` provisional (their delivery days' final listings are still to come): ${c.provisional.join(', ')};` : ''}`
      + `${c.incomplete.length ? ` incomplete: ${c.incomplete.join(', ')};` : ''}`
      + ' see pingroll status';
}

/** The header as name and value, in the words of the text and HTML forms. */
export function headerLines(doc: StatementDocument): Array<[string, string]> {
  const h = doc.header;
  return [
    ['month', h.month],
    ['zone', h.tz],
    ['status', h.status === 'closed' ? 'closed: these figures do not change' : 'open, figures so far'],
    ['version', h.version === null ? 'none yet (a statement is issued when the month is closed)' : `${h.version}${doc.versions.length > 1 ? ` (of ${doc.versions.length} issued; below)` : ''}`],
    ['closed at', h.closedAt ?? 'open, figures so far'],
    ['code version', h.codeVersion],
    ['figures from', h.source],
    ['share', h.share],
    ...(doc.completenessLine ? [['days', doc.completenessLine] as [string, string]] : []),
  ];
}

/** A figure as the statement shows it: with thousands separators; none: `-`. */
export const figure = (v: number | null): string => (v === null ? '-' : v.toLocaleString('en'));

/** What a version is, in words: the first close, or a reopen with its reason and how many figures changed. */
export function versionWords(v: VersionEntry): string {
  if (v.unrecorded) return `reopened; ${v.unrecorded}`;
  if (v.version === 1 && v.reason === null) return 'the month\'s first close';
  return `reopened: ${v.reason ?? '(no reason recorded)'}; ${v.changed?.length ?? 0} figures changed from version ${v.version - 1}`;
}

/** The statement as a text table (`--format table`). */
export function statementText(doc: StatementDocument): string {
  const h = doc.header;
  const lines = [h.status === 'closed'
    ? `Statement of ${h.month} (${h.tz}), version ${h.version}, closed ${h.closedAt}: these figures do not change`
    : `Minutes watched, ${h.month} (${h.tz}): open, figures so far`, ''];
  for (const [k, v] of headerLines(doc)) lines.push(`${k.padEnd(13)} ${v}`);
  lines.push('', `${'series'.padEnd(32)} ${'minutes'.padStart(14)} ${'share %'.padStart(9)} ${'pings'.padStart(12)} ${'days'.padStart(5)}`);
  for (const r of doc.rows) lines.push(`${r.series_id.padEnd(32)} ${figure(r.minutes_watched).padStart(14)} ${r.share_percent.padStart(9)} ${figure(r.pings).padStart(12)} ${String(r.days_watched).padStart(5)}`);
  lines.push(`${`total (${doc.total.series} series)`.padEnd(32)} ${figure(doc.total.minutes_watched).padStart(14)} ${(doc.total.share_percent ?? '-').padStart(9)} ${figure(doc.total.pings).padStart(12)}`);
  if (doc.rows.length === 0) {
    const { from } = utcDaysOfLocalMonth(h.month, h.tz);
    lines.push('', `(no rows for ${h.month}${h.tz === UTC ? '' : ` in ${h.tz}`}: roll its days up first, e.g. make backfill FROM=${from} TO=...)`);
  }
  if (doc.adjustments.length) {
    lines.push('', 'Adjustments to earlier months reported on this statement (late pings of closed months; their own statements do not change):', '',
      `${'closed month'.padEnd(12)} ${'zone'.padEnd(20)} ${'day (UTC)'.padEnd(10)} ${'series'.padEnd(32)} ${'minutes'.padStart(14)} ${'pings'.padStart(12)}`);
    for (const a of doc.adjustments) lines.push(`${a.closed_month.padEnd(12)} ${a.tz.padEnd(20)} ${a.day.padEnd(10)} ${a.series_id.padEnd(32)} ${figure(a.minutes_watched).padStart(14)} ${figure(a.pings).padStart(12)}`);
    lines.push(`${'total'.padEnd(77)} ${figure(doc.adjustmentsTotal.minutes_watched).padStart(14)} ${figure(doc.adjustmentsTotal.pings).padStart(12)}`);
  }
  if (doc.versions.length) {
    lines.push('', 'Versions of this statement:');
    for (const v of doc.versions) {
      lines.push(`  version ${v.version}, closed ${v.closedAt}: ${versionWords(v)}`);
      if (v.changed?.length) {
        lines.push(`    ${'series'.padEnd(32)} ${'figure'.padEnd(16)} ${'from'.padStart(14)} ${'to'.padStart(14)}`);
        for (const c of v.changed) lines.push(`    ${c.series_id.padEnd(32)} ${c.field.padEnd(16)} ${figure(c.from).padStart(14)} ${figure(c.to).padStart(14)}`);
      }
    }
  }
  if (doc.notes.length) lines.push('', ...doc.notes);
  return lines.join('\n') + '\n';
}

/**
 * The CSV's columns. One table, every row alike, so that any CSV reader takes it whole; `section`
 * says what a row is, and a row fills only the columns of its section:
 * `header` (name, value), `statement` and `total` (the series' figures), `adjustment` and
 * `adjustment_total`, `version` (version, closed_at, reason) and `change` (version, series_id,
 * figure, from, to).
 */
export const STATEMENT_CSV_COLUMNS = ['section', 'name', 'value', 'series_id', 'minutes_watched', 'share_percent', 'pings', 'days_watched',
  'closed_month', 'tz', 'day', 'version', 'closed_at', 'reason', 'figure', 'from', 'to'] as const;
type CsvColumn = (typeof STATEMENT_CSV_COLUMNS)[number];

/** The statement as CSV (`--format csv`): STATEMENT_CSV_COLUMNS, cells neutralized as csvText says. */
export function statementCsv(doc: StatementDocument): string {
  const row = (section: string, cells: Partial<Record<CsvColumn, string | number | null>>): Array<string | number | null> =>
    STATEMENT_CSV_COLUMNS.map((c) => (c === 'section' ? section : cells[c] ?? null));
  const h = doc.header;
  const header: Array<[string, string | number | null]> = [['month', h.month], ['tz', h.tz], ['status', h.status === 'closed' ? 'closed' : 'open, figures so far'],
    ['version', h.version], ['closed_at', h.closedAt], ['code_version', h.codeVersion], ['source', h.source], ['share_percent', h.share],
    ['completeness', doc.completenessLine], ...doc.notes.map((x) => ['note', x] as [string, string])];
  return csvText(STATEMENT_CSV_COLUMNS, [
    ...header.map(([name, value]) => row('header', { name, value })),
    ...doc.rows.map((r) => row('statement', { series_id: r.series_id, minutes_watched: r.minutes_watched, share_percent: r.share_percent, pings: r.pings, days_watched: r.days_watched })),
    row('total', { name: 'series', value: doc.total.series, minutes_watched: doc.total.minutes_watched, share_percent: doc.total.share_percent, pings: doc.total.pings }),
    ...doc.adjustments.map((a) => row('adjustment', { closed_month: a.closed_month, tz: a.tz, day: a.day, series_id: a.series_id, minutes_watched: a.minutes_watched, pings: a.pings })),
    row('adjustment_total', { minutes_watched: doc.adjustmentsTotal.minutes_watched, pings: doc.adjustmentsTotal.pings }),
    ...doc.versions.flatMap((v) => [
      row('version', { version: v.version, closed_at: v.closedAt, reason: v.unrecorded ?? v.reason }),
      ...(v.changed ?? []).map((c) => row('change', { version: v.version, series_id: c.series_id, figure: c.field, from: c.from, to: c.to })),
    ]),
  ]);
}

/** The statement as JSON (`--format json`): shares as numbers to the stated precision. */
export function statementJson(doc: StatementDocument): string {
  const h = doc.header;
  return JSON.stringify({
    header: { month: h.month, tz: h.tz, status: h.status, version: h.version, closed_at: h.closedAt, code_version: h.codeVersion, source: h.source, share_percent: h.share },
    rows: doc.rows.map((r) => ({ ...r, share_percent: Number(r.share_percent) })),
    total: { ...doc.total, share_percent: doc.total.share_percent === null ? null : Number(doc.total.share_percent) },
    adjustments: doc.adjustments,
    adjustments_total: doc.adjustmentsTotal,
    versions: doc.versions.map((v) => ({ version: v.version, closed_at: v.closedAt, reason: v.reason, changed: v.changed, ...(v.unrecorded ? { unrecorded: v.unrecorded } : {}) })),
    completeness: doc.completeness,
    notes: doc.notes,
  }, null, 2) + '\n';
}
