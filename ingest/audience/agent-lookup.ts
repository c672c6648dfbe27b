/**
 * A ping's device and whether a person drove it (contract §10), from its user agent: operating
 * system, device type and browser or player family by ua-parser-js (1.x, MIT; 2.x is AGPL), and the
 * bot list of isbot. Both are maintained lists; what pingroll adds is its own knowledge of players:
 *
 * - A video player's own HTTP stack is a player, not a bot. isbot names ExoPlayer, okhttp, Lavf,
 *   GStreamer and AppleTV's user agents (libraries, to a web site), and each is how a native app's
 *   player fetches a ping: a user agent that starts with one of PLAYERS is never on the bot list. A
 *   script's user agent starts with its own library (`curl/8`, `python-requests/2`), whatever it adds.
 * - A player family the browser parser does not know is named from PLAYERS (`ExoPlayer`, `Roku`).
 */
/// <reference path="./ua-parser-js.d.ts" />
import { createRequire } from 'node:module';
import type UAParserClass from 'ua-parser-js';
import { ClearingMap } from '../../lib/clearing-map.js';

/** The two libraries, loaded at the first user agent: a run that parses nothing never pays for them. */
let libraries: { isbotMatch: (ua: string) => string | null; UAParser: typeof UAParserClass } | null = null;
function lib(): NonNullable<typeof libraries> {
  if (libraries) return libraries;
  const require = createRequire(import.meta.url);
  return (libraries = { isbotMatch: (require('isbot') as { isbotMatch: (ua: string) => string | null }).isbotMatch, UAParser: require('ua-parser-js') as typeof UAParserClass });
}

export interface Agent {
  os: string;
  deviceType: string;
  browser: string;
  /** The rule that names the user agent as automated traffic; null: none. */
  rule: string | null;
  /** Why, for the rejects: the part of the user agent the list matched. */
  reason: string | null;
}

export const UNKNOWN = 'unknown';

/** The bot-list rule's name, as `agent_rule` and `daily_invalid_traffic` give it. */
export const BOT_LIST_RULE = 'bot_list';

/** Player HTTP stacks, by the token their user agent starts with, and the family each is counted as. */
const PLAYERS: ReadonlyArray<[RegExp, string]> = [
  [/^(?:ExoPlayerLib|ExoPlayer|AndroidXMedia3)\b/i, 'ExoPlayer'],
  [/^AppleCoreMedia\b/i, 'AppleCoreMedia'],
  [/^AppleTV/i, 'AppleCoreMedia'],
  [/^AVPlayer\b/i, 'AVPlayer'],
  [/^stagefright\b/i, 'Stagefright'],
  [/^Dalvik\b/i, 'Android'],
  [/^okhttp\b/i, 'OkHttp'],
  [/^Roku\b/i, 'Roku'],
  [/^(?:VLC|LibVLC)\b/i, 'VLC'],
  [/^(?:mpv|libmpv)\b/i, 'mpv'],
  [/^Lavf\b/i, 'FFmpeg'],
  [/^GStreamer\b/i, 'GStreamer'],
  [/^Kodi\b/i, 'Kodi'],
];

/** ua-parser's device types, as kept; a desktop OS with no device type is a desktop. */
const DEVICE_TYPES = new Set(['mobile', 'tablet', 'smarttv', 'console', 'wearable', 'embedded', 'xr']);
const DESKTOP_OS = /^(?:Windows|Mac OS|macOS|Linux|Ubuntu|Debian|Fedora|Chrom(?:e|ium) OS|FreeBSD|OpenBSD|NetBSD|Solaris|Mint|Arch|Gentoo|SUSE|Red Hat|CentOS)$/;

/** A name as kept: at most 32 characters of letters, digits, spaces and `._-` (the parser's names are a fixed vocabulary; this holds the rows bounded whatever it returns). */
function name(v: string | undefined): string {
  const s = (v ?? '').replace(/[^A-Za-z0-9 ._-]+/g, '').trim().slice(0, 32);
  return s === '' ? UNKNOWN : s;
}

const CACHE_ENTRIES = 50_000;
const cache = new ClearingMap<string, Agent>(CACHE_ENTRIES);

/** What a user agent says (cached: a day has few distinct ones). */
export function describeAgent(ua: string | null): Agent {
  if (ua === null) return { os: UNKNOWN, deviceType: UNKNOWN, browser: UNKNOWN, rule: null, reason: null };
  let a = cache.get(ua);
  if (a) return a;
  a = describe(ua);
  cache.set(ua, a);
  return a;
}

function describe(ua: string): Agent {
  const { isbotMatch, UAParser } = lib();
  const player = PLAYERS.find(([re]) => re.test(ua))?.[1] ?? null;
  const match = player === null ? isbotMatch(ua) : null;
  const r = new UAParser(ua).getResult();
  const os = name(r.os.name);
  const type = r.device.type && DEVICE_TYPES.has(r.device.type) ? r.device.type : DESKTOP_OS.test(os) ? 'desktop' : UNKNOWN;
  return {
    os, deviceType: type, browser: r.browser.name ? name(r.browser.name) : player ?? UNKNOWN,
    rule: match === null ? null : BOT_LIST_RULE,
    reason: match === null ? null : `user agent on the bot list (isbot): ${JSON.stringify(match.slice(0, 64))}`,
  };
}
