/**
 * The ping's parameters from a request-URI's query string (contract §1a), decoded exactly as WHATWG
 * `URLSearchParams` decodes the logged text: split on `&`, name and value at the first `=`, `+` is a
 * space, `%XY` a byte, a malformed `%` stays literal, and the bytes are read as UTF-8 with U+FFFD for
 * invalid sequences. (Node 20's own URLSearchParams differs from the standard when raw non-ASCII
 * characters meet %-escapes; the tests hold this code to the reference implementation.)
 *
 * The query is read once as a string and walked with string built-ins, which V8 runs natively;
 * only the seven parameters staged are kept, and only values with `%` or `+` are decoded.
 */

/** Parameter names, without the `x-` prefix. */
export const PARAMS = ['series', 'episode', 'session', 'user', 'ping', 'platform', 'pos'] as const;
export type ParamName = (typeof PARAMS)[number];

/** Each value, or null when absent. */
export interface PingParams {
  series: string | null;
  episode: string | null;
  session: string | null;
  user: string | null;
  ping: string | null;
  platform: string | null;
  pos: string | null;
}

/** Buffer's own slice method skips `toString`'s argument handling: measurably cheaper per record. */
type SlicingBuffer = Buffer & { utf8Slice(start: number, end: number): string };

/**
 * The `x-` name wins over the bare alias whenever it is present (even empty); among repeats of one
 * name the first wins.
 */
export class PingParamReader {
  /** Raw values: a slot per parameter for `x-` names, then one each for bare aliases. */
  private readonly raw: Array<string | undefined> = new Array(2 * PARAMS.length).fill(undefined);
  private scratch = Buffer.allocUnsafe(1024);

  /** The parameters of the query string `b[s, e)` (without the `?`). */
  read(b: Buffer, s: number, e: number): PingParams {
    return this.readText(s < e ? (b as SlicingBuffer).utf8Slice(s, e) : '');
  }

  readText(q: string): PingParams {
    const raw = this.raw;
    raw.fill(undefined);
    const n = q.length;
    let a = 0;
    while (a < n) {
      let z = q.indexOf('&', a);
      if (z < 0) z = n;
      if (z > a) {
        let eq = q.indexOf('=', a);
        if (eq < 0 || eq > z) eq = z;
        this.take(q, a, eq, z);
      }
      a = z + 1;
    }
    return {
      series: this.value(0), episode: this.value(1), session: this.value(2), user: this.value(3), ping: this.value(4), platform: this.value(5), pos: this.value(6),
    };
  }

  /** One `name=value` sequence: the name is `q[a, eq)`, the value `q[eq + 1, z)`. */
  private take(q: string, a: number, eq: number, z: number): void {
    let name = q, ns = a, ne = eq;
    // An encoded name (`x%2Dseries`) means the same as the plain one to URLSearchParams.
    for (let i = a; i < eq; i++) {
      const c = q.charCodeAt(i);
      if (c === 0x25 /* % */ || c === 0x2b /* + */) {
        name = this.decode(q.slice(a, eq));
        ns = 0;
        ne = name.length;
        break;
      }
    }
    let slot: number = PARAMS.length;
    if (ne - ns > 2 && name.charCodeAt(ns) === 0x78 /* x */ && name.charCodeAt(ns + 1) === 0x2d /* - */) {
      slot = 0;
      ns += 2;
    }
    const p = paramIndex(name, ns, ne);
    if (p < 0 || this.raw[slot + p] !== undefined) return;
    this.raw[slot + p] = eq < z ? q.slice(eq + 1, z) : '';
  }

  private value(p: number): string | null {
    const v = this.raw[p] ?? this.raw[p + PARAMS.length];
    if (v === undefined) return null;
    return v.indexOf('%') < 0 && v.indexOf('+') < 0 ? v : this.decode(v);
  }

  /** URLSearchParams' decoding of one name or value: `+` to space, then percent-decoding of the UTF-8 bytes. */
  decode(v: string): string {
    const bytes = Buffer.from(v.indexOf('+') < 0 ? v : v.replace(/\+/g, ' '), 'utf8');
    if (this.scratch.length < bytes.length) this.scratch = Buffer.allocUnsafe(2 * bytes.length);
    const out = this.scratch;
    let n = 0;
    for (let i = 0; i < bytes.length; i++) {
      const c = bytes[i]!;
      if (c === 0x25 && i + 2 < bytes.length && hex(bytes[i + 1]!) >= 0 && hex(bytes[i + 2]!) >= 0) {
        out[n++] = hex(bytes[i + 1]!) * 16 + hex(bytes[i + 2]!);
        i += 2;
      } else out[n++] = c;
    }
    return (out as SlicingBuffer).utf8Slice(0, n);
  }
}

function hex(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

/** Which of PARAMS `name[s, e)` is, or -1. */
function paramIndex(name: string, s: number, e: number): number {
  const len = e - s;
  for (let i = 0; i < PARAMS.length; i++) {
    const p = PARAMS[i]!;
    if (p.length === len && name.startsWith(p, s)) return i;
  }
  return -1;
}
