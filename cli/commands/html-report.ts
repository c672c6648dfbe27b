/**
 * `pingroll report --date D --html FILE` and `--month M --html FILE`: a self-contained HTML page
 * with charts, read from the warehouse (DuckDB or Redshift, the same SQL). Self-contained: the chart
 * library (chart.js, its UMD build) and the data are inlined, so the page opens with no network.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { DuckDbWarehouse } from '../../export/warehouse/duckdb/duckdb-warehouse.js';
import type { RedshiftWarehouse } from '../../export/warehouse/redshift/redshift-warehouse.js';
import { idKey, portableString, sqlString } from '../../lib/duckdb-engine.js';
import { rowsOrNoneIfMissing } from '../../export/warehouse/warehouse.js';
import { addMonths } from '../../lib/utc-day.js';
import { COMPLETION_THRESHOLDS } from '../../rollup/rules.js';
import { figure, headerLines, versionWords, type StatementDocument } from './statement-document.js';

type Readable = Pick<DuckDbWarehouse | RedshiftWarehouse, 'query' | 'description'>;

interface Chart { id: string; title: string; type: 'bar' | 'line' | 'doughnut'; labels: string[]; values: number[]; horizontal?: boolean }

/** A table: its id, title, column names (those of numbers aligned right), rows and footer rows (as shown). */
export interface PageTable { id: string; title: string; columns: string[]; numeric?: boolean[]; rows: string[][]; foot?: string[][] }

/** The statement beside the charts (a month's page): its title, header (name, value), tables and notes. */
export interface PageStatement { title: string; header: Array<[string, string]>; tables: PageTable[]; notes: string[] }

export interface ReportPage { title: string; subtitle: string; facts: Array<[string, string]>; charts: Chart[]; statement?: PageStatement }

const num = (v: unknown): number => Number(v ?? 0);

/**
 * What both pages show over their days (`where`, on `day`): minutes by hour, the top series and
 * episodes, the source mix and the audit, with the pings and the minutes watched in all. Sums over
 * one day are the day's rows themselves.
 */
async function breakdown(wh: Readable, schema: string, where: string, hourTitle: string) {
  const q = <T>(sql: string) => wh.query<T>(sql);
  const rows = (sql: string) => q<{ label: string; v: unknown }>(sql);
  const hourly = await q<{ hour: unknown; v: unknown }>(`SELECT hour, SUM(minutes_watched) AS v FROM ${schema}daily_hourly_stats WHERE ${where} GROUP BY hour ORDER BY hour`);
  const byHour = Array.from({ length: 24 }, (_, h) => num(hourly.find((r) => num(r.hour) === h)?.v));
  const series = await rows(`SELECT MIN(series_id) AS label, SUM(minutes_watched) AS v FROM ${schema}daily_series_stats WHERE ${where} GROUP BY ${idKey('series_id')} ORDER BY v DESC, ${idKey('MIN(series_id)')} LIMIT 10`);
  const episodes = await rows(`SELECT MIN(series_id || ' / ' || episode_id) AS label, SUM(minutes_watched) AS v FROM ${schema}daily_episode_stats WHERE ${where} GROUP BY ${idKey('series_id')}, ${idKey('episode_id')}
    ORDER BY v DESC, ${idKey('MIN(series_id)')}, ${idKey('MIN(episode_id)')} LIMIT 10`);
  const [mix] = await q<{ s3: unknown; ddb: unknown; pings: unknown }>(`SELECT SUM(s3_pings) AS s3, SUM(dynamodb_pings) AS ddb, SUM(pings) AS pings FROM ${schema}daily_episode_stats WHERE ${where}`);
  const audit = await rows(`SELECT source || ' ' || outcome AS label, SUM(records) AS v FROM ${schema}daily_ingest_audit WHERE ${where} GROUP BY source, outcome ORDER BY source, outcome`);
  const platforms = await rowsOrNoneIfMissing(rows(`SELECT platform AS label, SUM(minutes_watched) AS v FROM ${schema}daily_platform_stats WHERE ${where} GROUP BY platform ORDER BY v DESC, platform`));
  // Drop-off: of the sessions with a playhead in episodes the catalog has, the share that reached each
  // point of the episode (none without a catalog: no chart).
  const [reach] = await rowsOrNoneIfMissing(q<Record<string, unknown>>(`SELECT SUM(sessions_with_position) AS n, ${COMPLETION_THRESHOLDS.map((p) => `SUM(reached_${p}) AS r${p}`).join(', ')}
    FROM ${schema}daily_episode_completion WHERE ${where}`));
  const withPosition = num(reach?.n);
  const completion: Chart[] = withPosition > 0 ? [{ id: 'completion', title: 'Sessions reaching each point of the episode, % (episodes in the catalog)', type: 'bar',
    labels: COMPLETION_THRESHOLDS.map((p) => `${p}%`), values: COMPLETION_THRESHOLDS.map((p) => Math.round((num(reach![`r${p}`]) / withPosition) * 1000) / 10) }] : [];
  const bars = (id: string, title: string, r: Array<{ label: string; v: unknown }>): Chart => ({ id, title, type: 'bar', horizontal: true, labels: r.map((x) => x.label), values: r.map((x) => num(x.v)) });
  return {
    pings: num(mix?.pings),
    // Distinct session-minutes, which the hours add up to (episode rows would count a minute twice).
    minutes: byHour.reduce((x, y) => x + y, 0),
    hours: { id: 'by-hour', title: hourTitle, type: 'bar', labels: byHour.map((_, h) => String(h).padStart(2, '0')), values: byHour } as Chart,
    rest: [
      bars('top-series', 'Top series by minutes watched', series),
      bars('top-episodes', 'Top episodes by minutes watched', episodes),
      bars('platforms', 'Minutes watched by platform', platforms),
      ...completion,
      { id: 'sources', title: 'Pings by source', type: 'doughnut', labels: ['S3 access logs', 'DynamoDB'], values: [num(mix?.s3), num(mix?.ddb)] } as Chart,
      bars('audit', 'Records read, by outcome', audit),
    ],
  };
}

/**
 * The day's concurrency: the series with the day's highest peak (daily_peaks), and its sessions
 * minute by minute (daily_series_minutes; a minute with no row had none). Null on a day with no pings.
 */
async function concurrency(wh: Readable, schema: string, where: string): Promise<{ fact: string; chart: Chart } | null> {
  // (A warehouse loaded before the table existed: the page without the chart.)
  const [top] = await rowsOrNoneIfMissing(wh.query<{ series_id: string; peak: unknown; at: string }>(`SELECT series_id, peak_sessions AS peak, CAST(peak_minute AS VARCHAR(32)) AS at
    FROM ${schema}daily_peaks WHERE ${where} AND episode_id IS NULL ORDER BY peak_sessions DESC, ${idKey('series_id')} LIMIT 1`));
  if (!top) return null;
  const rows = await wh.query<{ at: string; sessions: unknown }>(`SELECT CAST(minute AS VARCHAR(32)) AS at, sessions FROM ${schema}daily_series_minutes
    WHERE ${where} AND ${idKey('series_id')} = ${idKey(portableString(top.series_id))}`);
  const hhmm = (at: string): string => String(at).slice(11, 16);
  const byMinute = new Map(rows.map((r) => [hhmm(r.at), num(r.sessions)]));
  const labels = Array.from({ length: 1440 }, (_, m) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`);
  return {
    fact: `${num(top.peak).toLocaleString('en')} sessions at ${hhmm(top.at)} (${top.series_id})`,
    chart: { id: 'concurrency', title: `Concurrent sessions by minute (UTC): ${top.series_id}, the day's highest peak`, type: 'line', labels, values: labels.map((l) => byMinute.get(l) ?? 0) },
  };
}

/** The day's page: minutes by hour, concurrency, top series and episodes, the source mix, the audit. */
export async function dayPage(wh: Readable, schema: string, day: string): Promise<ReportPage> {
  const where = `day = DATE ${sqlString(day)}`;
  const b = await breakdown(wh, schema, where, 'Minutes watched by hour (UTC)');
  const runs = await wh.query<{ state: string; published_at: unknown }>(`SELECT state, CAST(published_at AS VARCHAR(32)) AS published_at FROM ${schema}daily_runs WHERE ${where}`).catch(() => []);
  const peak = await concurrency(wh, schema, where);
  return {
    title: `pingroll: ${day}`,
    subtitle: `${wh.description}; UTC`,
    facts: [['pings', b.pings.toLocaleString('en')], ['minutes watched', b.minutes.toLocaleString('en')],
      ...(peak ? [['peak concurrency', peak.fact] as [string, string]] : []),
      ['state', runs[0] ? `${runs[0].state}${runs[0].state === 'provisional' ? ': final once its delivery days have had their last full listings (pingroll status says when)' : ''} (published ${String(runs[0].published_at).slice(0, 19)})` : 'not published']],
    charts: [b.hours, ...(peak ? [peak.chart] : []), ...b.rest],
  };
}

/**
 * The month's page: its statement (the document `report --month` writes: header, rows and total,
 * adjustments, versions; or why it could not be read) beside the charts: the daily trend, minutes by
 * hour, top series and episodes, the source mix, the audit.
 */
export async function monthPage(wh: Readable, schema: string, month: string, statement: StatementDocument | Error): Promise<ReportPage> {
  const where = `day >= DATE ${sqlString(`${month}-01`)} AND day < DATE ${sqlString(addMonths(`${month}-01`, 1))}`;
  const trend = await wh.query<{ label: string; v: unknown }>(`SELECT CAST(day AS VARCHAR(10)) AS label, SUM(minutes_watched) AS v FROM ${schema}daily_hourly_stats WHERE ${where} GROUP BY day ORDER BY day`);
  const b = await breakdown(wh, schema, where, 'Minutes watched by hour (UTC), the month');
  const doc = statement instanceof Error ? null : statement;
  return {
    title: `pingroll: ${month}`,
    subtitle: `${wh.description}; UTC; ${trend.length} days with rows${doc?.header.status === 'closed' ? `; closed: statement version ${doc.header.version}, issued ${doc.header.closedAt}` : ''}`,
    facts: [['pings', b.pings.toLocaleString('en')], ['minutes watched', b.minutes.toLocaleString('en')], ['days with rows', String(trend.length)]],
    charts: [{ id: 'trend', title: 'Minutes watched per day', type: 'line', labels: trend.map((r) => String(r.label)), values: trend.map((r) => num(r.v)) }, b.hours, ...b.rest],
    statement: doc ? statementSection(doc) : { title: `Statement of ${month}`, header: [], tables: [], notes: [`The statement could not be read from the warehouse: ${(statement as Error).message}`] },
  };
}

/** The statement's document as the page shows it: the same parts as the text table. */
export function statementSection(doc: StatementDocument): PageStatement {
  const h = doc.header;
  const changes = doc.versions.flatMap((v) => (v.changed ?? []).map((c) => [String(v.version), c.series_id, c.field, figure(c.from), figure(c.to)]));
  return {
    title: h.status === 'closed' ? `Statement of ${h.month} (${h.tz}), version ${h.version}` : `Minutes watched, ${h.month} (${h.tz}): open, figures so far`,
    header: headerLines(doc),
    tables: [
      {
        id: 'statement-rows', title: 'Minutes watched per series', columns: ['series', 'minutes watched', 'share %', 'pings', 'days watched'], numeric: [false, true, true, true, true],
        rows: doc.rows.map((r) => [r.series_id, figure(r.minutes_watched), r.share_percent, figure(r.pings), String(r.days_watched)]),
        foot: [[`total (${doc.total.series} series)`, figure(doc.total.minutes_watched), doc.total.share_percent ?? '-', figure(doc.total.pings), '']],
      },
      ...(doc.adjustments.length ? [{
        id: 'adjustments', title: 'Adjustments to earlier months reported on this statement (late pings of closed months; their own statements do not change)',
        columns: ['closed month', 'zone', 'day (UTC)', 'series', 'minutes watched', 'pings'], numeric: [false, false, false, false, true, true],
        rows: doc.adjustments.map((a) => [a.closed_month, a.tz, a.day, a.series_id, figure(a.minutes_watched), figure(a.pings)]),
        foot: [['total', '', '', '', figure(doc.adjustmentsTotal.minutes_watched), figure(doc.adjustmentsTotal.pings)]],
      }] : []),
      ...(doc.versions.length ? [{
        id: 'versions', title: 'Versions of this statement', columns: ['version', 'closed at', 'why'],
        rows: doc.versions.map((v) => [String(v.version), v.closedAt, versionWords(v)]),
      }] : []),
      ...(changes.length ? [{
        id: 'changes', title: 'What each reopen changed', columns: ['version', 'series', 'figure', 'from', 'to'], numeric: [false, false, false, true, true], rows: changes,
      }] : []),
    ],
    notes: doc.notes,
  };
}

/** A table, its numbers aligned right. */
function tableHtml(t: PageTable): string {
  const cell = (tag: 'th' | 'td', v: string, i: number): string => `<${tag}${t.numeric?.[i] ? ' class="num"' : ''}>${escapeHtml(v)}</${tag}>`;
  const rows = (rs: string[][]): string => rs.map((r) => `<tr>${r.map((v, i) => cell('td', v, i)).join('')}</tr>`).join('');
  return `<section id="${t.id}"><h3>${escapeHtml(t.title)}</h3><table><thead><tr>${t.columns.map((c, i) => cell('th', c, i)).join('')}</tr></thead>`
    + `<tbody>${rows(t.rows)}</tbody>${t.foot?.length ? `<tfoot>${rows(t.foot)}</tfoot>` : ''}</table></section>`;
}

/** The statement: its header as a list of names and values, its tables, its notes. */
function statementHtml(s: PageStatement): string {
  return `<section id="statement"><h2>${escapeHtml(s.title)}</h2>`
    + `<dl>${s.header.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join('')}</dl>`
    + s.tables.map(tableHtml).join('\n')
    + s.notes.map((x) => `<p class="note">${escapeHtml(x)}</p>`).join('')
    + '</section>';
}

let chartJs: string | null = null;
/** chart.js's UMD build, to inline (the package exports only its module builds; the UMD file sits beside them). */
function chartLibrary(): string {
  chartJs ??= readFileSync(join(dirname(createRequire(import.meta.url).resolve('chart.js')), 'chart.umd.min.js'), 'utf8');
  return chartJs;
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page, whole: style, data, the chart library and the script that draws, inlined. */
export function renderPage(page: ReportPage): string {
  // JSON inside a script element: `<` escaped so no value can close the element.
  const data = JSON.stringify(page.charts).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(page.title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1d2430; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } .sub { color: #5b6575; margin-bottom: 16px; }
.facts { display: flex; gap: 24px; margin-bottom: 16px; } .facts div { background: #f2f4f8; padding: 8px 12px; border-radius: 6px; }
.facts b { display: block; font-size: 18px; }
.grid { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 16px; }
figure { margin: 0; border: 1px solid #e2e6ee; border-radius: 6px; padding: 12px; } figcaption { font-weight: 600; margin-bottom: 8px; }
.chart { position: relative; height: 280px; }
h2 { font-size: 18px; margin: 0 0 8px; } h3 { font-size: 15px; margin: 20px 0 8px; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; } th, td { text-align: left; padding: 4px 12px 4px 0; border-bottom: 1px solid #e2e6ee; }
th.num, td.num { text-align: right; white-space: nowrap; } tfoot td { font-weight: 600; border-top: 2px solid #1d2430; }
.beside { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 16px; align-items: start; }
.beside > .grid { grid-template-columns: minmax(0, 1fr); }
#statement { border: 1px solid #e2e6ee; border-radius: 6px; padding: 12px; overflow-x: auto; } #statement td:not(:last-child) { white-space: nowrap; }
#statement dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 12px; margin: 0 0 12px; } #statement dt { color: #5b6575; } #statement dd { margin: 0; }
#statement .note { color: #5b6575; }
@media (max-width: 960px) { .beside { grid-template-columns: minmax(0, 1fr); } }
</style></head>
<body data-charts="0">
<h1>${escapeHtml(page.title)}</h1><div class="sub">${escapeHtml(page.subtitle)}</div>
<div class="facts">${page.facts.map(([k, v]) => `<div>${escapeHtml(k)}<b>${escapeHtml(v)}</b></div>`).join('')}</div>
<div${page.statement ? ' class="beside"' : ''}>${page.statement ? `\n${statementHtml(page.statement)}` : ''}
<div class="grid">${page.charts.map((c) => `<figure id="${c.id}"><figcaption>${escapeHtml(c.title)}</figcaption><div class="chart"><canvas></canvas></div></figure>`).join('\n')}</div>
</div>
<script type="application/json" id="pingroll-data">${data}</script>
<script>${chartLibrary()}</script>
<script>
(function () {
  var charts = JSON.parse(document.getElementById('pingroll-data').textContent);
  var colors = ['#2f6fdb', '#e0803a', '#3aa56b', '#c2455a', '#7a5cc7', '#2aa1b3', '#b58b22', '#6b7280', '#d45fa6', '#4c8c2b'];
  var drawn = 0;
  charts.forEach(function (c) {
    var canvas = document.querySelector('#' + c.id + ' canvas');
    new Chart(canvas, {
      type: c.type,
      data: { labels: c.labels, datasets: [{ label: c.title, data: c.values, borderColor: colors[0], tension: 0.2, pointRadius: c.labels.length > 200 ? 0 : 3,
        backgroundColor: c.type === 'doughnut' ? colors.slice(0, c.values.length) : colors[0] }] },
      options: { animation: false, responsive: true, maintainAspectRatio: false, indexAxis: c.horizontal ? 'y' : 'x',
        plugins: { legend: { display: c.type === 'doughnut' } } }
    });
    canvas.setAttribute('data-drawn', 'true');
    drawn++;
  });
  document.body.setAttribute('data-charts', String(drawn));
})();
</script>
</body></html>
`;
}

export async function writeReportPage(file: string, page: ReportPage): Promise<{ bytes: number }> {
  const html = renderPage(page);
  await writeFile(file, html);
  return { bytes: Buffer.byteLength(html) };
}
