/**
 * What the WebAssembly ping rules ask of JavaScript about a client value they have not seen
 * (wasm/client-cache.as.ts, contract §10): the staged row's fields for it, which the reader writes
 * into the row (record-reader.ts). An IP gives its country; a user agent its operating system, device
 * type, browser or player, and bot rule (null: none). The names are letters, digits, spaces and `._-`
 * (agent-lookup.ts, geo-lookup.ts): ASCII. No value (absent, `-`, or not kept) gives the fields of
 * none: `ZZ`; `unknown` and no rule.
 */
import { CLIENT_IP } from '../access-log/wasm-abi.js';
import { describeAgent, type Agent } from './agent-lookup.js';
import { geoLookup, UNKNOWN_COUNTRY } from './geo-lookup.js';

/** The staged fields of the client value of `kind` at [start, start + len) of `bytes` (the module's memory: read during the call only), in the staged order; null for NULL. */
export type ClientDescriber = (kind: number, bytes: Uint8Array, start: number, len: number) => ReadonlyArray<string | null>;

/** The fields of a user agent's description, in the staged order. */
export function agentFields(a: Agent): Array<string | null> {
  return [a.os, a.deviceType, a.browser, a.rule];
}

/**
 * A describer with the IP-to-country database at `geoipDb` (PINGROLL_GEOIP_DB; the shipped one when
 * null), opened now: a database that cannot be read stops the run before any object is parsed.
 */
export function clientDescriber(geoipDb: string | null): ClientDescriber {
  const geo = geoLookup(geoipDb);
  return (kind, bytes, start, len) => {
    if (len === 0) return kind === CLIENT_IP ? [UNKNOWN_COUNTRY] : agentFields(describeAgent(null));
    // An address is read where it is: no string is made of it.
    if (kind === CLIENT_IP) return [geo.countryOf(bytes, start, len)];
    return agentFields(describeAgent(Buffer.from(bytes.buffer, bytes.byteOffset + start, len).toString('latin1')));
  };
}
