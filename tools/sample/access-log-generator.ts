/**
 * A seeded generator of realistic S3 server access logs for one day of viewing: heartbeat pings from
 * sessions (some spilling past midnight), client retries that reuse the ping id, records S3 delivers
 * twice, objects delivered hours or a day late, other bucket traffic, failed ping GETs, bad queries,
 * odd but valid lines (spaced requesters, unescaped quotes, old 18-field records, unknown trailing
 * fields, bare aliases, encoded values), lines that are not records at all, and automated traffic
 * (scripts, crawlers and a headless browser fetching the ping URL, and a player stuck in a loop).
 * Each viewing session sends from one address of a few whose country is known (contract §10).
 *
 * The same seed gives the same bytes. With `truth`, it also reports every record it wrote, so tests
 * can compute the expected rollup independently of the pipeline.
 */
import { defaultConfig } from '../../infra/config.js';
import { DAY_MS } from '../../lib/utc-day.js';
import { trafficAddress, trafficAgent } from './traffic-audience.js';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

export interface SampleOptions {
  /** Event day, YYYY-MM-DD. */
  date: string;
  /** Viewing sessions that start on the day. */
  sessions: number;
  seed?: number;
  series?: number;
  episodesPerSeries?: number;
  /** Other bucket traffic per ping. */
  noise?: number;
  /** Records per log object (before duplicates). */
  recordsPerObject?: number;
  /** Share of objects that are gzip-compressed (half of them without a .gz suffix). */
  gzipShare?: number;
  /** Share of objects delivered late: hours later, or the next day. */
  lateShare?: number;
  /** Object key prefix, SimplePrefix style (`logs/`). */
  prefix?: string;
  bucket?: string;
  pingKey?: string;
  /** Collect every record written, for tests. */
  truth?: boolean;
  /** Sessions of automated traffic (contract §10): every fifth a player in a loop, the rest scripts and crawlers; one per 50 viewing sessions when not given. */
  automated?: number;
  /**
   * Viewing sessions that send bursts (contract §10's `session_rate` judged minute by minute): each
   * twelve minutes long in one 64-minute block, with more pings than minutes + 5 and fewer than 5 a
   * minute on the whole, so that only its minutes decide. Every other one has one minute of 6 distinct
   * pings (invalid traffic); the rest 3 a minute for five minutes (pings). None when not given.
   */
  bursts?: number;
  /**
   * Where viewers come from: `few` (the default), one of nine known addresses and six user agents;
   * `traffic`, as real traffic has them: an address of each session's own across the address space,
   * IPv4 and IPv6, and user agents from hundreds (tools/sample/traffic-audience.ts).
   */
  audience?: 'few' | 'traffic';
  /**
   * Share of viewing sessions (0 to 1) whose app resends pings it could not deliver (contract §4's
   * `repeat`): when it is next opened, hours to three weeks later, a third of the session's pings
   * with ids are sent again with those ids, a minute apart from then on (their own new time, often a
   * later day's). Their first sending was logged too. None when not given.
   */
  resends?: number;
}

export type TruthOutcome = 'ping' | 'not_ping' | 'http_error' | 'bad_query' | 'malformed' | 'bad_item' | 'invalid_traffic';

/** One record as the generator meant it. */
export interface TruthRecord {
  outcome: TruthOutcome;
  /** Where it was read from; S3 when absent. */
  source?: 's3' | 'dynamodb';
  /** Event time; NaN for a record whose time is unreadable. */
  eventTimeMs: number;
  /** Day the record belongs to (its event day, or its object's name day). */
  day: string;
  series?: string;
  episode?: string;
  session?: string;
  user?: string | null;
  /** contract §4 dedupe key. */
  dedupeKey?: string;
  naturalKey?: string;
  /** The platform as sent, decoded (`x-platform`); the rollup normalises it. */
  platform?: string | null;
  /** The playhead as staged: whole seconds, or null for one sent that is not 1-9 digits. */
  pos?: number | null;
  /** Where and on what it was watched (contract §10), as the generator means it: from its address and user agent. */
  country?: string;
  os?: string;
  deviceType?: string;
  browser?: string;
  /** For `invalid_traffic`: the rule that must catch it (`bot_list`, `session_rate`). */
  rule?: string;
}

export interface LogObject {
  key: string;
  /** The records, newline-terminated. Kept as text until written: a million Buffers held at once
   * would each count as external memory and make V8 run a full GC per object. */
  text: string;
  gzip: boolean;
  /** Delivery time (the name's timestamp), epoch ms. */
  deliveredMs: number;
  records: number;
  /** What the object holds, with `truth`. */
  truth: TruthRecord[];
}

export interface Sample {
  objects: LogObject[];
  records: number;
  /** Uncompressed size of all objects. */
  bytes: number;
  truth: TruthRecord[];
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
// As players send them: some to normalise ('Android+TV' is androidtv), one no list names, none at all.
const PLATFORMS = ['web', 'ios', 'android', 'roku', 'tvos', 'firetv', 'Android+TV', 'smart_fridge', ''];
const AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
  'Roku/DVP-13.0 (13.0.0.4170-AE)',
  'ExoPlayerLib/2.19.1 (Linux; Android 14) okhttp/4.12.0',
  // Unescaped quotes inside a quoted field, as real logs have them.
  'Mozilla/5.0 "compatible" SmartTV/2.1',
  'AppleCoreMedia/1.0.0.22A3354 (iPad; U; CPU OS 18_0 like Mac OS X; en_us)',
];
/** What each player's user agent is (contract §10): operating system, device type, browser or player family. */
const AGENT_DEVICES: Record<string, { os: string; deviceType: string; browser: string }> = {
  [AGENTS[0]!]: { os: 'Windows', deviceType: 'desktop', browser: 'Chrome' },
  [AGENTS[1]!]: { os: 'iOS', deviceType: 'mobile', browser: 'Mobile Safari' },
  [AGENTS[2]!]: { os: 'unknown', deviceType: 'smarttv', browser: 'Roku' },
  [AGENTS[3]!]: { os: 'Android', deviceType: 'unknown', browser: 'ExoPlayer' },
  [AGENTS[4]!]: { os: 'unknown', deviceType: 'smarttv', browser: 'unknown' },
  [AGENTS[5]!]: { os: 'iOS', deviceType: 'tablet', browser: 'AppleCoreMedia' },
};
/** Automated traffic the bot list names: scripts, a crawler, a headless browser. */
const BOT_AGENTS = [
  'curl/8.5.0',
  'python-requests/2.32.3',
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/130.0.0.0 Safari/537.36',
];
/**
 * Viewers' addresses, each with its country in the IP-to-country database shipped (IPtoASN's, contract
 * §10): a session sends from one. A private and a documentation address have none (ZZ).
 */
const ADDRESSES: ReadonlyArray<[string, string]> = [
  ['81.2.69.142', 'GB'], ['193.0.6.139', 'NL'], ['8.8.8.8', 'US'], ['2001:4860:4860::8888', 'US'], ['202.12.27.33', 'JP'],
  ['200.160.2.3', 'BR'], ['41.0.0.1', 'ZA'], ['10.20.30.40', 'ZZ'], ['192.0.2.1', 'ZZ'],
];
const OWNER = '79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be';
const OAI = 'arn:aws:iam::cloudfront:user/CloudFront Origin Access Identity E2EXAMPLEID';

/** sfc32: small, fast, and good enough for sample data. */
export function rng(seed: number): () => number {
  let a = 0x9e3779b9, b = 0x243f6a88, c = 0xb7e15162, d = seed >>> 0;
  const next = (): number => {
    a >>>= 0; b >>>= 0; c >>>= 0; d >>>= 0;
    const t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    const r = (t + d) | 0;
    c = (c + r) | 0;
    return (r >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  return next;
}

function pad2(n: number): string {
  return n < 10 ? '0' + n : String(n);
}

export function logTime(ms: number): string {
  const d = new Date(ms);
  return `${pad2(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())} +0000`;
}

export function objectKeyTime(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}-${pad2(d.getUTCHours())}-${pad2(d.getUTCMinutes())}-${pad2(d.getUTCSeconds())}`;
}

function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

interface Pending {
  line: string;
  eventMs: number;
  truth?: TruthRecord | undefined;
  /** Position in delivery order. */
  order?: number;
}

/** The generator's `i`th series id, as sent (`+` for a space). */
function sampleSeriesId(i: number): string {
  return i % 7 === 3 ? `The+Crown+S${i}` : `s${1000 + i}`;
}

/**
 * An episode catalog (PINGROLL_EPISODE_CATALOG, a CSV) of the generator's series and episodes: each
 * one's duration, 10 to 38 minutes, except each series' last episode, which it leaves out (its
 * completion figures are NULL). Ids as the tables have them (decoded); a column the catalog ignores.
 */
export function sampleEpisodeCatalog(opts: { series?: number; episodesPerSeries?: number } = {}): string {
  const rows = ['series_id,title,episode_id,duration_seconds'];
  for (const { series, episode, seconds } of sampleEpisodes(opts)) rows.push(`${series},"Episode ${episode.slice(1)}, part ""one""",${episode},${seconds}`);
  return rows.join('\n') + '\n';
}

/** The episodes sampleEpisodeCatalog lists, and their durations. */
export function sampleEpisodes(opts: { series?: number; episodesPerSeries?: number } = {}): Array<{ series: string; episode: string; seconds: number }> {
  const out: Array<{ series: string; episode: string; seconds: number }> = [];
  for (let i = 0; i < (opts.series ?? 40); i++) {
    const series = sampleSeriesId(i).replace(/\+/g, ' ');
    for (let e = 1; e < (opts.episodesPerSeries ?? 12); e++) out.push({ series, episode: `e${e}`, seconds: 600 + 120 * ((i * 7 + e * 3) % 15) });
  }
  return out;
}

export function generateSample(opts: SampleOptions): Sample {
  const rand = rng(opts.seed ?? 1);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const hex = (n: number): string => {
    let h = '';
    while (h.length < n) h += ((rand() * 0x100000000) >>> 0).toString(16).padStart(8, '0');
    return h.slice(0, n).toUpperCase();
  };
  const uuid = (): string => {
    const h = hex(32).toLowerCase();
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20)}`;
  };
  const bucket = opts.bucket ?? 'media-pings';
  const pingKey = opts.pingKey ?? defaultConfig().pingKeys[0]!;
  const nSeries = opts.series ?? 40;
  const nEpisodes = opts.episodesPerSeries ?? 12;
  const noise = opts.noise ?? 0.15;
  const dayStart = Date.parse(opts.date + 'T00:00:00Z');
  const wantTruth = opts.truth ?? false;
  // The seed in the high bits: samples generated with different seeds never share a request ID.
  let requestSeq = ((opts.seed ?? 1) % 0x100000) * 0x100000000;
  const requestId = (): string => (requestSeq++).toString(16).toUpperCase().padStart(16, '0');

  // Host IDs are opaque to pingroll: a pool keeps generation cheap.
  const hostIds = Array.from({ length: 256 }, () => hex(56) + '=');
  const pending: Pending[] = [];
  /** Pings resent days later (`resends`): delivered in objects of their own hour (see below). */
  const resent: Pending[] = [];
  const tail = (): string => {
    const r = rand();
    // Records from every era: the old 18-field format, today's 26 and 27, and one with a field AWS
    // has not told us about yet.
    if (r < 0.05) return ' -';
    if (r < 0.1) return ` - ${pick(hostIds)} SigV4 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader ${bucket}.s3.amazonaws.com TLSv1.2 - - us-east-1 FutureField`;
    if (r < 0.5) return ` - ${pick(hostIds)} - TLS_AES_128_GCM_SHA256 - ${bucket}.s3.amazonaws.com TLSv1.3 - -`;
    return ` - ${pick(hostIds)} - TLS_AES_128_GCM_SHA256 - ${bucket}.s3.us-east-1.amazonaws.com TLSv1.3 - - -`;
  };
  const record = (ms: number, requester: string, reqId: string, op: string, key: string, uri: string, status: number,
    err: string, bytes: string, referer: string, agent: string, from?: string): string =>
    `${OWNER} ${bucket} [${logTime(ms)}] ${address(from)} ${requester} ${reqId} ${op} ${key} ${uri} ${status} ${err} ${bytes} ${bytes} ${1 + Math.floor(rand() * 40)} ${Math.floor(rand() * 10)} ${referer} "${agent}"${tail()}`;
  const ip = (): string => `${1 + Math.floor(rand() * 220)}.${Math.floor(rand() * 256)}.${Math.floor(rand() * 256)}.${1 + Math.floor(rand() * 254)}`;
  // A session's own address, or a random one (drawn either way: the rest of the sample stays as it was).
  const address = (from: string | undefined): string => {
    const drawn = ip();
    return from ?? drawn;
  };

  const seriesIds = Array.from({ length: nSeries }, (_, i) => sampleSeriesId(i));
  const seriesName = (raw: string): string => raw.replace(/\+/g, ' ');

  // ---- viewing sessions and their pings
  // The audience of `traffic` from draws of its own: the rest of the sample is as `few` makes it.
  const traffic = opts.audience === 'traffic';
  const audienceRand = rng((opts.seed ?? 1) * 104_729 + 3);
  const resendRand = rng((opts.seed ?? 1) * 7_919 + 11);
  for (let s = 0; s < opts.sessions; s++) {
    const seriesRaw = seriesIds[Math.min(nSeries - 1, Math.floor(Math.pow(rand(), 2) * nSeries))]!;
    const episode = `e${1 + Math.floor(Math.pow(rand(), 1.5) * nEpisodes)}`;
    const session = uuid();
    const user = rand() < 0.7 ? `u${Math.floor(rand() * opts.sessions * 0.6)}` : null;
    const legacyClient = rand() < 0.1; // bare aliases, no ping ids
    const platform = pick(PLATFORMS);
    const drawnAgent = pick(AGENTS);
    const viaWebsite = rand() < 0.05;
    const viaCloudFront = rand() < 0.05;
    const minutes = 1 + Math.floor(-Math.log(1 - rand()) * 25);
    // The playhead (x-pos), from the session's id (no draw of its own, so the rest is as before): a
    // fifth start part-way in; some send a negative or exponent position once, some positions far
    // past any episode's end.
    const h = Number.parseInt(session.slice(0, 4), 16);
    const startPos = h % 5 === 0 ? (h % 20) * 60 : 0;
    const [from, country] = traffic ? trafficAddress(audienceRand) : ADDRESSES[Number.parseInt(session.slice(4, 8), 16) % ADDRESSES.length]!;
    const [agent, device] = traffic ? trafficAgent(audienceRand) : [drawnAgent, AGENT_DEVICES[drawnAgent]!];
    const playhead = (m: number): [string, number | null] => {
      if (m === 2 && (h >> 4) % 23 === 0) return ['-60', null];
      if (m === 3 && (h >> 4) % 29 === 0) return ['1e3', null];
      const p = startPos + m * 60 + ((h >> 4) % 31 === 0 ? 100_000 : 0);
      return [String(p), p];
    };
    let t = dayStart + Math.floor(rand() * DAY_MS);
    // A session whose app resends (draws of their own: with no resends the sample is as it was): it is
    // next opened this long after the session starts, and resends a third of its pings with ids.
    const reopenedMs = opts.resends && resendRand() < opts.resends ? Math.floor(2 * 3600_000 * Math.pow(21 * 12, resendRand())) : null;
    let resentOfSession = 0;
    for (let m = 0; m < minutes; m++, t += 60_000 + Math.floor((rand() - 0.5) * 4000)) {
      const pingId = legacyClient ? null : uuid();
      if (reopenedMs !== null && pingId && resendRand() < 1 / 3) {
        // Sent again on reopening, a minute after the one before: a new request, the same id, its own time.
        const at = t - 60_000 * m + reopenedMs + 61_000 * resentOfSession++;
        const reqId = requestId();
        const q = `x-series=${seriesRaw}&x-episode=${episode}&x-session=${session}${user ? `&x-user=${user}` : ''}&x-ping=${pingId}&x-ts=${at}&x-platform=${platform}`;
        const line = record(at, '-', reqId, 'REST.GET.OBJECT', pingKey, `"GET /${pingKey}?${q} HTTP/1.1"`, 200, '-', '43', '"-"', agent, from);
        const truth: TruthRecord | undefined = wantTruth
          ? { outcome: 'ping', eventTimeMs: Math.floor(at / 1000) * 1000, day: dayOf(at), series: seriesName(seriesRaw), episode, session, user, naturalKey: `r:${reqId}`,
            dedupeKey: pingId, platform: platform.replace(/\+/g, ' ') || null, pos: null, country, ...device }
          : undefined;
        resent.push({ line, eventMs: at, truth });
      }
      const tries = pingId && rand() < 0.03 ? 2 : 1;
      for (let attempt = 0; attempt < tries; attempt++) {
        const at = t + attempt * (1000 + Math.floor(rand() * 30_000));
        const reqId = requestId();
        const p = legacyClient ? '' : 'x-';
        let q = `${p}series=${seriesRaw}&${p}episode=${episode}&${p}session=${session}`;
        if (user) q += `&${p}user=${user}`;
        if (pingId) q += `&${p}ping=${pingId}`;
        const [posSent, pos] = playhead(m);
        q += `&${p}ts=${at}&${p}pos=${posSent}&${p}platform=${platform}&cb=${hex(6)}`;
        const op = viaWebsite ? 'WEBSITE.GET.OBJECT' : 'REST.GET.OBJECT';
        const line = record(at, viaCloudFront ? OAI : '-', reqId, op, pingKey, `"GET /${pingKey}?${q} HTTP/1.1"`,
          rand() < 0.05 ? 304 : 200, '-', rand() < 0.5 ? '43' : '-', '"-"', agent, from);
        const truth: TruthRecord | undefined = wantTruth
          ? {
            outcome: 'ping', eventTimeMs: Math.floor(at / 1000) * 1000, day: dayOf(at), series: seriesName(seriesRaw),
            episode, session, user, naturalKey: `r:${reqId}`, dedupeKey: pingId ?? `r:${reqId}`, platform: platform.replace(/\+/g, ' ') || null, pos,
            country, ...device,
          }
          : undefined;
        pending.push({ line, eventMs: at, truth });
        // Pings whose GET failed: counted as http_error.
        if (rand() < 0.004) {
          const failId = requestId();
          pending.push({
            line: record(at, '-', failId, op, pingKey, `"GET /${pingKey}?${q} HTTP/1.1"`, pick([403, 503, 500]),
              pick(['AccessDenied', 'SlowDown', 'InternalError']), '243', '"-"', agent),
            eventMs: at, truth: wantTruth ? { outcome: 'http_error', eventTimeMs: at, day: dayOf(at) } : undefined,
          });
        }
      }
    }
  }
  const pings = pending.length;

  // ---- broken clients: ping GETs whose query fails contract §1a
  const badQueries = Math.ceil(pings * 0.002);
  for (let i = 0; i < badQueries; i++) {
    const at = dayStart + Math.floor(rand() * DAY_MS);
    const variant = i % 3;
    const q = variant === 0 ? `x-series=s1&x-episode=e1&cb=${hex(4)}`
      : variant === 1 ? `x-series=&x-episode=e1&x-session=${uuid()}`
        : `x-series=${'z'.repeat(300)}&x-episode=e1&x-session=${uuid()}`;
    pending.push({
      line: record(at, '-', requestId(), 'REST.GET.OBJECT', pingKey, `"GET /${pingKey}?${q} HTTP/1.1"`, 200, '-', '43', '"-"', pick(AGENTS)),
      eventMs: at, truth: wantTruth ? { outcome: 'bad_query', eventTimeMs: at, day: dayOf(at) } : undefined,
    });
  }

  // ---- other traffic in the same bucket
  const others = Math.floor(pings * noise);
  for (let i = 0; i < others; i++) {
    const at = dayStart + Math.floor(rand() * DAY_MS);
    const r = rand();
    let line: string;
    if (r < 0.6) {
      const seg = `video/${pick(seriesIds)}/seg-${Math.floor(rand() * 900)}.ts`;
      line = record(at, '-', requestId(), 'REST.GET.OBJECT', seg, `"GET /${seg} HTTP/1.1"`, 200, '-', String(100000 + Math.floor(rand() * 900000)), '"https://watch.example.com/"', pick(AGENTS));
    } else if (r < 0.75) {
      line = record(at, 'arn:aws:iam::123456789012:user/uploader', requestId(), 'REST.PUT.OBJECT', `video/new/${hex(8)}.mp4`, `"PUT /video/new/x.mp4 HTTP/1.1"`, 200, '-', '-', '"-"', 'aws-cli/2.15.0');
    } else if (r < 0.85) {
      line = record(at, '-', requestId(), 'REST.HEAD.OBJECT', pingKey, `"HEAD /${pingKey} HTTP/1.1"`, 200, '-', '-', '"-"', 'curl/8.5.0');
    } else if (r < 0.95) {
      line = record(at, '-', requestId(), 'REST.GET.OBJECT', 'favicon.ico', `"GET /favicon.ico HTTP/1.1"`, 404, 'NoSuchKey', '243', '"-"', pick(AGENTS));
    } else {
      line = `${OWNER} ${bucket} [${logTime(at)}] - svc:s3.amazonaws.com ${requestId()} S3.EXPIRE.OBJECT video/old/${hex(6)}.ts "-" - - - - - - "-" "-" - - - - - - - - - -`;
    }
    pending.push({ line, eventMs: at, truth: wantTruth ? { outcome: 'not_ping', eventTimeMs: at, day: dayOf(at) } : undefined });
  }

  // ---- lines that are not records
  const junk = Math.ceil(pings * 0.0005);
  for (let i = 0; i < junk; i++) {
    const at = dayStart + Math.floor(rand() * DAY_MS);
    const full = record(at, '-', requestId(), 'REST.GET.OBJECT', pingKey, `"GET /${pingKey}?x-series=s1 HTTP/1.1"`, 200, '-', '43', '"-"', 'x');
    // Cut mid-record, as a torn write would; no readable status block survives.
    const line = i % 2 === 0 ? full.slice(0, full.indexOf('REST.GET')) : full.replace(/\[[^\]]+\]/, 'yesterday');
    pending.push({ line, eventMs: at, truth: wantTruth ? { outcome: 'malformed', eventTimeMs: NaN, day: '' } : undefined });
  }

  // ---- automated traffic (contract §10), from a generator of its own: scripts, a crawler and a
  // headless browser on the bot list, sending pings as a player would; every fifth a player's user
  // agent sending eight pings a minute (a loop no person drives).
  const botRand = rng((opts.seed ?? 1) * 7919 + 17);
  const automated = opts.automated ?? Math.ceil(opts.sessions / 50);
  for (let b = 0; b < automated; b++) {
    const loop = b % 5 === 4;
    const agent = loop ? AGENTS[0]! : BOT_AGENTS[b % BOT_AGENTS.length]!;
    const session = `bot-${opts.seed ?? 1}-${b}`;
    const seriesRaw = seriesIds[b % nSeries]!;
    const [from, country] = ADDRESSES[b % ADDRESSES.length]!;
    const minutes = loop ? 3 : 5 + Math.floor(botRand() * 25);
    const perMinute = loop ? 8 : 1;
    let t = dayStart + Math.floor(botRand() * (DAY_MS - 3_600_000));
    for (let m = 0; m < minutes; m++, t += 60_000) {
      for (let k = 0; k < perMinute; k++) {
        const at = t - (t % 60_000) + k * 7000 + Math.floor(botRand() * 1000);
        const reqId = requestId();
        const pingId = `${session}-${m}-${k}`;
        const q = `x-series=${seriesRaw}&x-episode=e1&x-session=${session}&x-ping=${pingId}&x-ts=${at}`;
        const line = record(at, '-', reqId, 'REST.GET.OBJECT', pingKey, `"GET /${pingKey}?${q} HTTP/1.1"`, 200, '-', '43', '"-"', agent, from);
        pending.push({
          line, eventMs: at, truth: wantTruth ? {
            outcome: 'invalid_traffic', rule: loop ? 'session_rate' : 'bot_list', eventTimeMs: Math.floor(at / 1000) * 1000, day: dayOf(at),
            series: seriesName(seriesRaw), episode: 'e1', session, user: null, naturalKey: `r:${reqId}`, dedupeKey: pingId, platform: null, pos: null, country,
          } : undefined,
        });
      }
    }
  }

  // ---- bursts inside normal viewing (`bursts`): from the automated generator's draws, after its own.
  for (let b = 0; b < (opts.bursts ?? 0); b++) {
    const caught = b % 2 === 0;
    const agent = AGENTS[1 + (b % 3)]!;
    const session = `burst-${opts.seed ?? 1}-${b}`;
    const seriesRaw = seriesIds[b % nSeries]!;
    const [from, country] = ADDRESSES[(b + 3) % ADDRESSES.length]!;
    // A start that keeps its twelve minutes in one 64-minute block of the day.
    const block = Math.floor(botRand() * 20);
    let t = dayStart + (block * 64 + Math.floor(botRand() * 40)) * 60_000;
    for (let m = 0; m < 12; m++, t += 60_000) {
      const perMinute = caught ? (m === 6 ? 6 : 1) : (m < 5 ? 3 : 1);
      for (let k = 0; k < perMinute; k++) {
        const at = t + k * 7000 + Math.floor(botRand() * 1000);
        const reqId = requestId();
        const pingId = `${session}-${m}-${k}`;
        const q = `x-series=${seriesRaw}&x-episode=e1&x-session=${session}&x-ping=${pingId}&x-ts=${at}`;
        const line = record(at, '-', reqId, 'REST.GET.OBJECT', pingKey, `"GET /${pingKey}?${q} HTTP/1.1"`, 200, '-', '43', '"-"', agent, from);
        const common = { eventTimeMs: Math.floor(at / 1000) * 1000, day: dayOf(at), series: seriesName(seriesRaw), episode: 'e1', session, user: null, naturalKey: `r:${reqId}`, dedupeKey: pingId, platform: null, pos: null, country };
        pending.push({
          line, eventMs: at, truth: wantTruth ? (caught ? { outcome: 'invalid_traffic', rule: 'session_rate', ...common } : { outcome: 'ping', ...common, ...AGENT_DEVICES[agent]! }) : undefined,
        });
      }
    }
  }

  // ---- deliver: shuffle into objects by delivery time
  for (let i = pending.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [pending[i], pending[j]] = [pending[j]!, pending[i]!];
  }
  // Records arrive roughly in time order (give or take five minutes), delivered 5-60 minutes after
  // the event; a few objects hours or a day later.
  for (const p of pending) {
    p.order = p.eventMs + (rand() - 0.5) * 600_000;
    // Flatten the line now: a million template-literal ropes alive at once make the GC crawl.
    p.line.indexOf('\u0001');
  }
  pending.sort((a, b) => a.order! - b.order!);
  const perObject = opts.recordsPerObject ?? 2000;
  const prefix = opts.prefix ?? 'logs/';
  const objects: LogObject[] = [];
  const truth: TruthRecord[] = [];
  const duplicates: Pending[] = [];
  let bytes = 0, records = 0;
  const flush = (batch: Pending[], deliveredMs: number): void => {
    const key = `${prefix}${objectKeyTime(deliveredMs)}-${hex(16)}`;
    const day = dayOf(deliveredMs);
    const held: TruthRecord[] = [];
    for (const p of batch) {
      if (p.truth) held.push(p.truth.day === '' ? { ...p.truth, day } : p.truth);
    }
    truth.push(...held);
    const text = batch.map((p) => p.line).join('\n') + '\n';
    const gzip = rand() < (opts.gzipShare ?? 0.3);
    const name = gzip && rand() < 0.5 ? key + '.gz' : key;
    bytes += text.length;
    records += batch.length;
    objects.push({ key: name, text, gzip, deliveredMs, records: batch.length, truth: held });
  };
  for (let i = 0; i < pending.length; i += perObject) {
    const batch = pending.slice(i, i + perObject);
    const last = batch[batch.length - 1]!.eventMs;
    const r = rand();
    const lateShare = opts.lateShare ?? 0.02;
    const delay = r < lateShare / 2 ? DAY_MS + Math.floor(rand() * 6 * 3600_000)
      : r < lateShare ? 3 * 3600_000 + Math.floor(rand() * 6 * 3600_000) : 300_000 + Math.floor(rand() * 3300_000);
    // S3 delivers a few records twice, in another object.
    for (const p of batch) if (rand() < 0.003) duplicates.push(p);
    flush(batch, last + delay);
  }
  // Two hours after the last record (with resends, after the last of those delivered twice: a resend
  // weeks later must not hold back the day's copies).
  if (duplicates.length) flush(duplicates, pending[pending.length - 1]!.eventMs + 2 * 3600_000);
  // The resends, spread over weeks: an object per hour that has some, delivered 5-60 minutes after its last.
  const byHour = new Map<number, Pending[]>();
  for (const p of resent) {
    const hour = Math.floor(p.eventMs / 3600_000);
    const batch = byHour.get(hour);
    if (batch) batch.push(p);
    else byHour.set(hour, [p]);
  }
  for (const [, batch] of [...byHour].sort((a, b) => a[0] - b[0])) {
    batch.sort((a, b) => a.eventMs - b.eventMs);
    flush(batch, batch[batch.length - 1]!.eventMs + 300_000 + Math.floor(rand() * 3300_000));
  }
  objects.sort((a, b) => a.key.localeCompare(b.key));
  return { objects, records, bytes, truth };
}

/**
 * The object as if S3 had delivered it at `deliveredMs` instead: named by that time, and its records
 * without a readable time belonging to that day (contract §5). What a late delivery really looks like.
 */
export function redeliver(o: LogObject, deliveredMs: number): LogObject {
  const slash = o.key.lastIndexOf('/') + 1;
  const key = `${o.key.slice(0, slash)}${objectKeyTime(deliveredMs)}${o.key.slice(slash + objectKeyTime(o.deliveredMs).length)}`;
  return { ...o, key, deliveredMs, truth: o.truth.map((t) => (Number.isNaN(t.eventTimeMs) ? { ...t, day: dayOf(deliveredMs) } : t)) };
}

/** An object's bytes as stored: gzip-compressed when the sample says so. */
export function objectBody(o: LogObject): Buffer {
  const raw = Buffer.from(o.text, 'utf8');
  return o.gzip ? gzipSync(raw) : raw;
}

/** Writes the sample's objects under `dir`, keeping their key paths. */
export async function writeSample(sample: Sample, dir: string): Promise<void> {
  const made = new Set<string>();
  for (const o of sample.objects) {
    const path = join(dir, o.key);
    const parent = path.slice(0, path.lastIndexOf('/'));
    if (!made.has(parent)) {
      await mkdir(parent, { recursive: true });
      made.add(parent);
    }
    await writeFile(path, objectBody(o));
  }
}
