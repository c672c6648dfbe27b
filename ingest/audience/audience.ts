/**
 * The audience columns of staged format 3 (ingest/staged-ping.ts AUDIENCE_COLUMNS), as the spool stages
 * a part's rows: each distinct client IP and user agent of the part not seen before in this DuckDB
 * session is looked up once in JavaScript (geo-lookup.ts, agent-lookup.ts) and kept in two temporary
 * tables; the rows then take their columns by a join. The IP and user agent are never staged.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../../lib/duckdb-engine.js';
import { STAGED_FORMAT_2_COLUMNS } from '../staged-ping.js';
import { describeAgent, UNKNOWN } from './agent-lookup.js';
import { geoLookup, UNKNOWN_COUNTRY, type GeoLookup } from './geo-lookup.js';

/** Lookups kept per DuckDB session before the tables start again (a busy day has millions of addresses). */
const KEPT = 200_000;
/** Values inserted by one statement. */
const INSERT_ROWS = 2_000;

export class Audience {
  private readonly ready = new WeakSet<DuckDBConnection>();
  private kept = new WeakMap<DuckDBConnection, number>();

  /** With the IP-to-country database at `geoipDb` (PINGROLL_GEOIP_DB; the shipped one when null), opened when an address is first looked up. */
  constructor(private readonly geoipDb: string | null = null) {}

  get geo(): GeoLookup {
    return geoLookup(this.geoipDb);
  }

  /** Looks up the client IPs and user agents of `table` (columns `client_ip`, `user_agent`) not yet known in this session. */
  async lookUp(engine: DuckDBConnection, table: string): Promise<void> {
    if (!this.ready.has(engine)) {
      await engine.run(`CREATE OR REPLACE TEMP TABLE audience_places (client_ip VARCHAR PRIMARY KEY, country VARCHAR NOT NULL);
        CREATE OR REPLACE TEMP TABLE audience_agents (user_agent VARCHAR PRIMARY KEY, os VARCHAR NOT NULL, device_type VARCHAR NOT NULL, browser VARCHAR NOT NULL, agent_rule VARCHAR)`);
      this.ready.add(engine);
      this.kept.set(engine, 0);
    }
    if ((this.kept.get(engine) ?? 0) > KEPT) {
      await engine.run('DELETE FROM audience_places; DELETE FROM audience_agents');
      this.kept.set(engine, 0);
    }
    const ips = (await engine.runAndReadAll(`SELECT DISTINCT client_ip FROM ${table} WHERE client_ip IS NOT NULL AND client_ip NOT IN (SELECT client_ip FROM audience_places)`)).getRows().map((r) => String(r[0]));
    if (ips.length) {
      const geo = this.geo;
      await insert(engine, 'audience_places', ips.map((ip) => [ip, geo.country(ip)]));
    }
    const uas = (await engine.runAndReadAll(`SELECT DISTINCT user_agent FROM ${table} WHERE user_agent IS NOT NULL AND user_agent NOT IN (SELECT user_agent FROM audience_agents)`)).getRows().map((r) => String(r[0]));
    await insert(engine, 'audience_agents', uas.map((ua) => {
      const a = describeAgent(ua);
      return [ua, a.os, a.deviceType, a.browser, a.rule];
    }));
    this.kept.set(engine, (this.kept.get(engine) ?? 0) + ips.length + uas.length);
  }

  /** The staged rows of `table` (looked up): format 2's columns, then the audience columns, in the staged order. */
  static stagedRows(table: string): string {
    return `SELECT ${STAGED_FORMAT_2_COLUMNS.map((c) => c.name).join(', ')},
        coalesce(audience_places.country, ${sqlString(UNKNOWN_COUNTRY)}) AS country,
        coalesce(audience_agents.os, ${sqlString(UNKNOWN)}) AS os, coalesce(audience_agents.device_type, ${sqlString(UNKNOWN)}) AS device_type,
        coalesce(audience_agents.browser, ${sqlString(UNKNOWN)}) AS browser, audience_agents.agent_rule AS agent_rule
      FROM ${table} LEFT JOIN audience_places USING (client_ip) LEFT JOIN audience_agents USING (user_agent)`;
  }
}

async function insert(engine: DuckDBConnection, table: string, rows: Array<Array<string | null>>): Promise<void> {
  for (let i = 0; i < rows.length; i += INSERT_ROWS) {
    const values = rows.slice(i, i + INSERT_ROWS).map((r) => `(${r.map((v) => (v === null ? 'NULL' : sqlString(v))).join(', ')})`).join(', ');
    await engine.run(`INSERT OR IGNORE INTO ${table} VALUES ${values}`);
  }
}
