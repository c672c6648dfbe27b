/**
 * The expected rollup of a day, computed from what the generator wrote (its truth records) with
 * plain JavaScript collections: an implementation of contract §4-§5 independent of the SQL under test.
 * Small data only.
 */
import { createHash } from 'node:crypto';
import type { TruthRecord } from '../../tools/sample/access-log-generator.js';
import { DEFAULT_PLATFORMS } from '../../ingest/ping-record.js';

export interface EpisodeRow {
  day: string; series_id: string; episode_id: string; pings: number; sessions: number; viewers: number;
  minutes_watched: number; first_ping_at: string; last_ping_at: string; s3_pings: number; dynamodb_pings: number;
}
export interface SeriesRow {
  day: string; series_id: string; episodes: number; pings: number; sessions: number; viewers: number;
  minutes_watched: number; first_ping_at: string; last_ping_at: string;
}
export interface AuditRow { day: string; source: string; outcome: string; records: number }

const ts = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').replace(/\.000Z$/, '');

const src = (r: TruthRecord): string => r.source ?? 's3';

/** The pings of a day that survive dedupe: one per key, S3 over DynamoDB, then the earliest, then the smallest natural key. */
export function survivors(truth: TruthRecord[], day: string): TruthRecord[] {
  const rank = (r: TruthRecord): number => (src(r) === 's3' ? 0 : 1);
  const kept = new Map<string, TruthRecord>();
  for (const r of truth) {
    if (r.day !== day || r.outcome !== 'ping') continue;
    const cur = kept.get(r.dedupeKey!);
    const better = !cur || rank(r) < rank(cur) || (rank(r) === rank(cur) && (r.eventTimeMs < cur.eventTimeMs
      || (r.eventTimeMs === cur.eventTimeMs && r.naturalKey! < cur.naturalKey!)));
    if (better) kept.set(r.dedupeKey!, r);
  }
  return [...kept.values()];
}

const DAY_MS = 86_400_000;
const repeatsCache = new WeakMap<TruthRecord[], Map<number, Set<TruthRecord>>>();

/** Whether a record's dedupe key is its ping id (the generator's natural keys are `r:` and `k:` ones). */
const hasPingId = (r: TruthRecord): boolean => !/^[rk]:/.test(r.dedupeKey!);

/**
 * Contract §4's window over every day of `truth`: the days' survivors with a ping id, in event-time
 * order; one is a repeat when the last counted one with its id is at most `w` days before it, else it
 * is counted. (A repeat is never counted, so a third sending more than `w` days after the first is
 * counted again.)
 */
export function windowRepeats(truth: TruthRecord[], w: number): Set<TruthRecord> {
  const cached = repeatsCache.get(truth)?.get(w);
  if (cached) return cached;
  const out = new Set<TruthRecord>();
  if (w > 0) {
    const days = [...new Set(truth.filter((t) => t.outcome === 'ping').map((t) => t.day))].sort();
    const all = days.flatMap((d) => survivors(truth, d)).filter(hasPingId).sort((a, b) => a.eventTimeMs - b.eventTimeMs);
    const lastCounted = new Map<string, number>();
    for (const p of all) {
      const c = lastCounted.get(p.dedupeKey!);
      if (c !== undefined && p.eventTimeMs - c <= w * DAY_MS) out.add(p);
      else lastCounted.set(p.dedupeKey!, p.eventTimeMs);
    }
  }
  const byW = repeatsCache.get(truth) ?? new Map<number, Set<TruthRecord>>();
  byW.set(w, out);
  repeatsCache.set(truth, byW);
  return out;
}

/** The survivors of `day` that it counts: with the window of `w` days (contract §4), its repeats left out. */
export function countedSurvivors(truth: TruthRecord[], day: string, w: number): TruthRecord[] {
  const repeats = windowRepeats(truth, w);
  return survivors(truth, day).filter((p) => !repeats.has(p));
}

export interface MonthRow { month: string; series_id: string; episodes: number; pings: number; sessions: number; viewers: number; minutes_watched: number; days_watched: number }

/** The month's series figures (contract §8): every day's survivors, distinct counts over the whole month. */
export function expectedMonth(truth: TruthRecord[], month: string, w = 0): MonthRow[] {
  return expectedMonthIn(truth, month, 'UTC', w).map(({ tz: _, ...row }) => row);
}

/** One formatter per zone: making an Intl.DateTimeFormat costs about as much as a thousand formats with one. */
const dayFormats = new Map<string, Intl.DateTimeFormat>();

/** The local `YYYY-MM-DD` of an instant's minute in `tz`, by the runtime's own zone data (Intl), not pingroll's code. */
export function localDayOf(ms: number, tz: string): string {
  let f = dayFormats.get(tz);
  if (!f) dayFormats.set(tz, f = new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' }));
  const p = Object.fromEntries(f.formatToParts(new Date(Math.floor(ms / 60000) * 60000)).map((x) => [x.type, x.value]));
  return `${p.year}-${p.month}-${p.day}`;
}

/**
 * A month's series figures in a time zone (contract §9): every UTC day's survivors (deduplicated per
 * UTC day), kept when their minute falls in the zone's local month; days watched are local days.
 */
export function expectedMonthIn(truth: TruthRecord[], month: string, tz: string, w = 0): Array<MonthRow & { tz: string }> {
  const days = [...new Set(truth.map((t) => t.day))];
  const bySeries = new Map<string, Array<TruthRecord & { local: string }>>();
  for (const day of days) {
    for (const p of countedSurvivors(truth, day, w)) {
      const local = localDayOf(p.eventTimeMs, tz);
      if (local.slice(0, 7) !== month) continue;
      const ps = bySeries.get(p.series!) ?? [];
      ps.push({ ...p, local });
      bySeries.set(p.series!, ps);
    }
  }
  return [...bySeries].map(([series_id, ps]) => ({
    month: `${month}-01`, series_id,
    episodes: new Set(ps.map((p) => p.episode)).size,
    pings: ps.length,
    sessions: new Set(ps.map((p) => p.session)).size,
    viewers: new Set(ps.map((p) => p.user ?? `session:${p.session}`)).size,
    minutes_watched: new Set(ps.map((p) => `${p.session}\u0000${Math.floor(p.eventTimeMs / 60000)}`)).size,
    days_watched: new Set(ps.map((p) => p.local)).size,
    tz,
  })).sort((a, b) => (a.series_id < b.series_id ? -1 : 1));
}

/** A day's expected rows; `w`: the ping-id window's days (contract §4; 0, the default: the day alone). */
export function expectedDay(truth: TruthRecord[], day: string, w = 0): { episodes: EpisodeRow[]; series: SeriesRow[]; audit: AuditRow[] } {
  const records = truth.filter((t) => t.day === day);
  const counts = new Map<string, number>();
  for (const r of records) counts.set(`${src(r)}\u0000${r.outcome}`, (counts.get(`${src(r)}\u0000${r.outcome}`) ?? 0) + 1);
  const all = survivors(truth, day);
  const pings = countedSurvivors(truth, day, w);
  for (const source of ['s3', 'dynamodb']) {
    const read = counts.get(`${source}\u0000ping`) ?? 0;
    const kept = all.filter((p) => src(p) === source).length;
    const repeats = kept - pings.filter((p) => src(p) === source).length;
    if (read > kept) counts.set(`${source}\u0000duplicate`, read - kept);
    if (repeats > 0) counts.set(`${source}\u0000repeat`, repeats);
  }
  const audit: AuditRow[] = [...counts].map(([k, n]) => {
    const [source, outcome] = k.split('\u0000') as [string, string];
    return { day, source, outcome, records: n };
  });
  audit.sort((a, b) => a.source.localeCompare(b.source) || a.outcome.localeCompare(b.outcome));

  const group = <K extends string>(key: (p: TruthRecord) => K): Map<K, TruthRecord[]> => {
    const m = new Map<K, TruthRecord[]>();
    for (const p of pings) {
      const k = key(p);
      const list = m.get(k);
      if (list) list.push(p);
      else m.set(k, [p]);
    }
    return m;
  };
  const stats = (ps: TruthRecord[]) => ({
    pings: ps.length,
    sessions: new Set(ps.map((p) => p.session)).size,
    viewers: new Set(ps.map((p) => p.user ?? `session:${p.session}`)).size,
    minutes_watched: new Set(ps.map((p) => `${p.session}\u0000${Math.floor(p.eventTimeMs / 60000)}`)).size,
    // A loop, not Math.min(...): a big day's episode has more pings than a call can take arguments.
    first_ping_at: ts(ps.reduce((m, p) => Math.min(m, p.eventTimeMs), Infinity)),
    last_ping_at: ts(ps.reduce((m, p) => Math.max(m, p.eventTimeMs), -Infinity)),
  });
  const episodes: EpisodeRow[] = [...group((p) => `${p.series}\u0000${p.episode}`)].map(([k, ps]) => {
    const [series_id, episode_id] = k.split('\u0000') as [string, string];
    const fromDynamo = ps.filter((p) => src(p) === 'dynamodb').length;
    return { day, series_id, episode_id, ...stats(ps), s3_pings: ps.length - fromDynamo, dynamodb_pings: fromDynamo };
  });
  const series: SeriesRow[] = [...group((p) => p.series!)].map(([series_id, ps]) => ({
    day, series_id, episodes: new Set(ps.map((p) => p.episode)).size, ...stats(ps),
  }));
  const byKey = (a: { series_id: string; episode_id?: string }, b: { series_id: string; episode_id?: string }): number =>
    a.series_id < b.series_id ? -1 : a.series_id > b.series_id ? 1 : (a.episode_id ?? '') < (b.episode_id ?? '') ? -1 : (a.episode_id ?? '') > (b.episode_id ?? '') ? 1 : 0;
  return { episodes: episodes.sort(byKey), series: series.sort(byKey), audit };
}

/** A day's minutes watched by UTC hour: distinct (session, minute) of the survivors within each hour. */
export function expectedHourly(truth: TruthRecord[], day: string): Array<{ day: string; hour: number; minutes_watched: number }> {
  const byHour = new Map<number, Set<string>>();
  for (const p of survivors(truth, day)) {
    const minute = Math.floor(p.eventTimeMs / 60000);
    const hour = new Date(p.eventTimeMs).getUTCHours();
    if (!byHour.has(hour)) byHour.set(hour, new Set());
    byHour.get(hour)!.add(`${p.session}\u0000${minute}`);
  }
  return [...byHour].sort((a, b) => a[0] - b[0]).map(([hour, set]) => ({ day, hour, minutes_watched: set.size }));
}

export interface PeakRow { day: string; series_id: string; episode_id: string | null; peak_sessions: number; peak_minute: string }
export interface SeriesMinuteRow { day: string; series_id: string; minute: string; sessions: number }

/** Distinct sessions of the survivors in each UTC minute (epoch minutes), grouped by `key`. */
function sessionsByMinute(pings: TruthRecord[], key: (p: TruthRecord) => string): Map<string, Map<number, Set<string>>> {
  const out = new Map<string, Map<number, Set<string>>>();
  for (const p of pings) {
    const k = key(p), minute = Math.floor(p.eventTimeMs / 60000);
    const minutes = out.get(k) ?? new Map<number, Set<string>>();
    out.set(k, minutes);
    const sessions = minutes.get(minute) ?? new Set<string>();
    minutes.set(minute, sessions);
    sessions.add(p.session!);
  }
  return out;
}

/** Each series' day minute by minute: distinct sessions with a surviving ping in the minute. */
export function expectedSeriesMinutes(truth: TruthRecord[], day: string): SeriesMinuteRow[] {
  const rows: SeriesMinuteRow[] = [];
  for (const [series_id, minutes] of sessionsByMinute(survivors(truth, day), (p) => p.series!)) {
    for (const [m, sessions] of minutes) rows.push({ day, series_id, minute: ts(m * 60000), sessions: sessions.size });
  }
  return rows.sort((a, b) => (a.series_id < b.series_id ? -1 : a.series_id > b.series_id ? 1 : a.minute < b.minute ? -1 : 1));
}

/** Peak concurrency per series (episode null) and per episode: the most sessions in a minute, at the earliest such minute. */
export function expectedPeaks(truth: TruthRecord[], day: string): PeakRow[] {
  const pings = survivors(truth, day);
  const rows: PeakRow[] = [];
  const peakOf = (minutes: Map<number, Set<string>>): [number, number] => {
    let best: [number, number] = [0, Infinity];
    for (const [m, s] of minutes) if (s.size > best[0] || (s.size === best[0] && m < best[1])) best = [s.size, m];
    return best;
  };
  for (const [k, minutes] of sessionsByMinute(pings, (p) => `${p.series}\u0000${p.episode}`)) {
    const [series_id, episode_id] = k.split('\u0000') as [string, string];
    const [n, m] = peakOf(minutes);
    rows.push({ day, series_id, episode_id, peak_sessions: n, peak_minute: ts(m * 60000) });
  }
  for (const [series_id, minutes] of sessionsByMinute(pings, (p) => p.series!)) {
    const [n, m] = peakOf(minutes);
    rows.push({ day, series_id, episode_id: null, peak_sessions: n, peak_minute: ts(m * 60000) });
  }
  const e = (r: PeakRow): string => r.episode_id ?? '';
  return rows.sort((a, b) => (a.series_id < b.series_id ? -1 : a.series_id > b.series_id ? 1 : e(a) < e(b) ? -1 : e(a) > e(b) ? 1 : 0));
}

/** The distinct viewers (`user`, else `session:<id>`) of the survivors of `days`, per series and over all series. */
export function expectedUniques(truth: TruthRecord[], days: string[]): { bySeries: Map<string, Set<string>>; all: Set<string> } {
  const bySeries = new Map<string, Set<string>>();
  const all = new Set<string>();
  for (const day of days) {
    for (const p of survivors(truth, day)) {
      const viewer = p.user ?? `session:${p.session}`;
      const set = bySeries.get(p.series!) ?? new Set<string>();
      bySeries.set(p.series!, set);
      set.add(viewer);
      all.add(viewer);
    }
  }
  return { bySeries, all };
}

export interface PlatformRow { day: string; series_id: string; platform: string; pings: number; sessions: number; viewers: number; minutes_watched: number }

/**
 * Each series' survivors by platform: the platform as sent, lowercased to its ASCII letters and
 * digits (none, or over 32 of them, is none), counted by name when `platforms` names it, else as
 * `unknown`; pings, distinct sessions, viewers (`user`, else `session:<id>`) and (session, minute).
 */
export function expectedPlatforms(truth: TruthRecord[], day: string, platforms: readonly string[] = DEFAULT_PLATFORMS): PlatformRow[] {
  const dayStart = Date.parse(`${day}T00:00:00Z`);
  const groups = new Map<string, { pings: number; sessions: Set<string>; viewers: Set<string>; minutes: Set<string> }>();
  for (const p of survivors(truth, day)) {
    const chars = (p.platform ?? '').replace(/[^A-Za-z0-9]/g, '').toLowerCase();
    const platform = chars && chars.length <= 32 && platforms.includes(chars) ? chars : 'unknown';
    const k = `${p.series}\u0000${platform}`;
    const g = groups.get(k) ?? { pings: 0, sessions: new Set<string>(), viewers: new Set<string>(), minutes: new Set<string>() };
    groups.set(k, g);
    g.pings++;
    g.sessions.add(p.session!);
    g.viewers.add(p.user ?? `session:${p.session}`);
    g.minutes.add(`${p.session}\u0000${Math.floor((p.eventTimeMs - dayStart) / 60000)}`);
  }
  return [...groups].map(([k, g]) => {
    const [series_id, platform] = k.split('\u0000') as [string, string];
    return { day, series_id, platform, pings: g.pings, sessions: g.sessions.size, viewers: g.viewers.size, minutes_watched: g.minutes.size };
  }).sort((a, b) => (a.series_id < b.series_id ? -1 : a.series_id > b.series_id ? 1 : a.platform < b.platform ? -1 : a.platform > b.platform ? 1 : 0));
}

/** Survivors grouped by `key`: pings, and distinct sessions, viewers and (session, minute) pairs, as the dimension tables count them. */
function byGroup(pings: TruthRecord[], key: (p: TruthRecord) => string[]): Array<{ key: string[]; pings: number; sessions: number; viewers: number; minutes_watched: number }> {
  const groups = new Map<string, { key: string[]; pings: number; sessions: Set<string>; viewers: Set<string>; minutes: Set<string> }>();
  for (const p of pings) {
    const k = key(p);
    const id = k.join('\u0000');
    const g = groups.get(id) ?? { key: k, pings: 0, sessions: new Set<string>(), viewers: new Set<string>(), minutes: new Set<string>() };
    groups.set(id, g);
    g.pings++;
    g.sessions.add(p.session!);
    g.viewers.add(p.user ?? `session:${p.session}`);
    g.minutes.add(`${p.session}\u0000${Math.floor(p.eventTimeMs / 60000)}`);
  }
  return [...groups.values()].map((g) => ({ key: g.key, pings: g.pings, sessions: g.sessions.size, viewers: g.viewers.size, minutes_watched: g.minutes.size }))
    .sort((a, b) => { for (let i = 0; i < a.key.length; i++) if (a.key[i] !== b.key[i]) return a.key[i]! < b.key[i]! ? -1 : 1; return 0; });
}

export interface CountryRow { day: string; series_id: string; country: string; pings: number; sessions: number; viewers: number; minutes_watched: number }
export interface DeviceRow { day: string; series_id: string; os: string; device_type: string; browser: string; pings: number; sessions: number; viewers: number; minutes_watched: number }
export interface InvalidRow { day: string; series_id: string; rule: string; records: number; sessions: number; minutes_watched: number }

/** Each series' day by country (contract §10), from the countries the generator meant; DynamoDB items have none (ZZ). */
export function expectedCountries(truth: TruthRecord[], day: string): CountryRow[] {
  return byGroup(survivors(truth, day), (p) => [p.series!, p.country ?? 'ZZ']).map(({ key: [series_id, country], ...m }) => ({ day, series_id: series_id!, country: country!, ...m }));
}

/** Each series' day by device (contract §10), from the devices the generator meant. */
export function expectedDevices(truth: TruthRecord[], day: string): DeviceRow[] {
  return byGroup(survivors(truth, day), (p) => [p.series!, p.os ?? 'unknown', p.deviceType ?? 'unknown', p.browser ?? 'unknown'])
    .map(({ key: [series_id, os, device_type, browser], ...m }) => ({ day, series_id: series_id!, os: os!, device_type: device_type!, browser: browser!, ...m }));
}

/** The day's automated traffic by series and rule: every record the generator sent as such, duplicates included. */
export function expectedInvalid(truth: TruthRecord[], day: string): InvalidRow[] {
  const bots = truth.filter((t) => t.day === day && t.outcome === 'invalid_traffic');
  const groups = new Map<string, TruthRecord[]>();
  for (const b of bots) groups.set(`${b.series}\u0000${b.rule}`, [...(groups.get(`${b.series}\u0000${b.rule}`) ?? []), b]);
  return [...groups].map(([k, rs]) => {
    const [series_id, rule] = k.split('\u0000') as [string, string];
    return { day, series_id, rule, records: rs.length, sessions: new Set(rs.map((r) => r.session)).size, minutes_watched: new Set(rs.map((r) => `${r.session}\u0000${Math.floor(r.eventTimeMs / 60000)}`)).size };
  }).sort((a, b) => (a.series_id < b.series_id ? -1 : a.series_id > b.series_id ? 1 : a.rule < b.rule ? -1 : 1));
}

export interface CompletionRow {
  day: string; series_id: string; episode_id: string; duration_seconds: number | null; sessions: number; sessions_with_position: number | null;
  reached_25: number | null; reached_50: number | null; reached_75: number | null; reached_95: number | null; avg_share_watched: number | null;
}

/**
 * Completion per episode: each session's furthest playhead among its survivors that is at most the
 * catalog's duration (`catalog`: "series\0episode" to seconds); sessions reaching 25/50/75/95% of it,
 * and the furthest playheads' mean share. Every figure null for an episode the catalog lacks.
 */
export function expectedCompletion(truth: TruthRecord[], day: string, catalog: Map<string, number>): CompletionRow[] {
  const episodes = new Map<string, Map<string, number | null>>();
  for (const p of survivors(truth, day)) {
    const k = `${p.series}\u0000${p.episode}`;
    const sessions = episodes.get(k) ?? new Map<string, number | null>();
    episodes.set(k, sessions);
    const duration = catalog.get(k);
    const pos = p.pos !== undefined && p.pos !== null && duration !== undefined && p.pos <= duration ? p.pos : null;
    const cur = sessions.get(p.session!) ?? null;
    sessions.set(p.session!, pos === null ? cur : Math.max(cur ?? -1, pos));
  }
  return [...episodes].map(([k, sessions]) => {
    const [series_id, episode_id] = k.split('\u0000') as [string, string];
    const duration = catalog.get(k) ?? null;
    const furthest = [...sessions.values()].filter((v): v is number => v !== null);
    const reached = (pct: number): number | null => (duration === null ? null : furthest.filter((f) => f * 100 >= pct * duration).length);
    return {
      day, series_id, episode_id, duration_seconds: duration, sessions: sessions.size, sessions_with_position: duration === null ? null : furthest.length,
      reached_25: reached(25), reached_50: reached(50), reached_75: reached(75), reached_95: reached(95),
      avg_share_watched: duration === null || furthest.length === 0 ? null : furthest.reduce((a, b) => a + b, 0) / (furthest.length * duration),
    };
  }).sort((a, b) => (a.series_id < b.series_id ? -1 : a.series_id > b.series_id ? 1 : a.episode_id < b.episode_id ? -1 : a.episode_id > b.episode_id ? 1 : 0));
}

/** Episodes' durations (the generator's sampleEpisodes), as expectedCompletion takes them. */
export function catalogDurations(episodes: ReadonlyArray<{ series: string; episode: string; seconds: number }>): Map<string, number> {
  return new Map(episodes.map((e) => [`${e.series}\u0000${e.episode}`, e.seconds]));
}

/**
 * A viewer's key as the contract documents it (docs/contract.md, the viewer datasets): the key's id,
 * the first 8 hex of SHA-256("pingroll viewer key id\n" + secret), then the first 24 hex of
 * SHA-256(secret + viewer), UTF-8. Written here again, not imported: the product is held to the
 * document, and to a fixed vector (test/rollup/viewer-key.test.ts).
 */
export function viewerKeyFor(secret: string, viewer: string): string {
  const sha = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');
  return sha(`pingroll viewer key id\n${secret}`).slice(0, 8) + sha(secret + viewer).slice(0, 24);
}

export interface AdjustmentRow {
  day: string; series_id: string; episode_id: string; pings: number; sessions: number; viewers: number; minutes_watched: number; after_close_records: number; duplicates: number;
}

/**
 * The adjustments of a closed day (contract §9), from what the month was closed with (`counted`) and
 * what came after (`late`): the late pings whose key no counted ping had, one survivor each; their
 * (session, minute) pairs that the closed figures of the episode did not have. `inMonth`: whether an
 * event time is in the closed month (a zone's month need not hold the whole UTC day).
 */
export function expectedAdjustments(counted: TruthRecord[], late: TruthRecord[], day: string, inMonth: (ms: number) => boolean = () => true): AdjustmentRow[] {
  const closed = survivors(counted, day);
  const closedKeys = new Set(counted.filter((r) => r.day === day && r.outcome === 'ping').map((r) => r.dedupeKey!));
  const lateDay = late.filter((r) => r.day === day && r.outcome === 'ping' && inMonth(r.eventTimeMs));
  const fresh = survivors(late.filter((r) => r.day === day && r.outcome === 'ping' && !closedKeys.has(r.dedupeKey!)), day).filter((r) => inMonth(r.eventTimeMs));
  const pair = (r: TruthRecord): string => `${r.session}\u0000${Math.floor(r.eventTimeMs / 60000)}`;
  const ep = (r: TruthRecord): string => `${r.series}\u0000${r.episode}`;
  const rows = new Map<string, AdjustmentRow>();
  for (const r of lateDay) {
    const row = rows.get(ep(r)) ?? { day, series_id: r.series!, episode_id: r.episode!, pings: 0, sessions: 0, viewers: 0, minutes_watched: 0, after_close_records: 0, duplicates: 0 };
    row.after_close_records++;
    rows.set(ep(r), row);
  }
  for (const [k, row] of rows) {
    const mine = fresh.filter((r) => ep(r) === k);
    const had = new Set(closed.filter((r) => ep(r) === k && inMonth(r.eventTimeMs)).map(pair));
    row.pings = mine.length;
    row.sessions = new Set(mine.map((r) => r.session)).size;
    row.viewers = new Set(mine.map((r) => r.user ?? `session:${r.session}`)).size;
    row.minutes_watched = new Set(mine.map(pair).filter((p) => !had.has(p))).size;
    row.duplicates = row.after_close_records - row.pings;
  }
  return [...rows.values()].sort((a, b) => (a.series_id < b.series_id ? -1 : a.series_id > b.series_id ? 1 : a.episode_id < b.episode_id ? -1 : 1));
}
