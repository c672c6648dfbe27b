/**
 * The ping's parameters from a request-URI's query string (SPEC §1a), decoded exactly as WHATWG
 * `URLSearchParams` decodes them: `+` is a space, `%XY` a byte, a malformed `%` stays literal, and the
 * bytes are read as UTF-8 with U+FFFD for invalid sequences. (Node 20's own URLSearchParams differs
 * from the standard when raw non-ASCII characters meet %-escapes; the tests hold this code to the
 * reference implementation.) Only the five parameters the rollup uses become strings; `x-ts`,
 * `x-pos`, `x-platform` and cache busters are skipped as bytes.
 */

/** Parameter names, without the `x-` prefix. */
export const PARAMS = ['series', 'episode', 'session', 'user', 'ping'] as const;
export type ParamName = (typeof PARAMS)[number];

/** Each value, or null when absent. */
export interface PingParams {
  series: string | null;
  episode: string | null;
  session: string | null;
  user: string | null;
  ping: string | null;
}

const PARAM_BYTES = PARAMS.map((p) => Buffer.from(p, 'latin1'));
const AMP = 0x26, EQ = 0x3d, PCT = 0x25, PLUS = 0x2b;

/** Buffer's own slice methods skip `toString`'s argument handling: measurably cheaper per value. */
type SlicingBuffer = Buffer & { utf8Slice(start: number, end: number): string };

/**
 * Reads ping parameters from `b[s, e)`. The `x-` name wins over the bare alias whenever it is
 * present (even empty); among repeats of one name the first wins.
 */
export class PingParamReader {
  private readonly xStart = new Int32Array(PARAMS.length);
  private readonly xEnd = new Int32Array(PARAMS.length);
  private readonly bareStart = new Int32Array(PARAMS.length);
  private readonly bareEnd = new Int32Array(PARAMS.length);
  private scratch = Buffer.allocUnsafe(1024);

  read(b: Buffer, s: number, e: number): PingParams {
    this.xStart.fill(-1);
    this.bareStart.fill(-1);
    let a = s;
    while (a < e) {
      let z = a, eq = -1;
      for (; z < e; z++) {
        const c = b[z];
        if (c === AMP) break;
        if (c === EQ && eq < 0) eq = z;
      }
      if (z > a) this.take(b, a, eq < 0 ? z : eq, z);
      a = z + 1;
    }
    return {
      series: this.value(b, 0), episode: this.value(b, 1), session: this.value(b, 2),
      user: this.value(b, 3), ping: this.value(b, 4),
    };
  }

  private value(b: Buffer, slot: number): string | null {
    if (this.xStart[slot]! >= 0) return this.decode(b, this.xStart[slot]!, this.xEnd[slot]!);
    if (this.bareStart[slot]! >= 0) return this.decode(b, this.bareStart[slot]!, this.bareEnd[slot]!);
    return null;
  }

  /** One `name=value` sequence: the name is `b[a, eq)`, the value `b[eq + 1, z)`. */
  private take(b: Buffer, a: number, eq: number, z: number): void {
    const valueStart = eq < z ? eq + 1 : z;
    let nameBuf = b, ns = a, ne = eq;
    for (let i = ns; i < ne; i++) {
      if (b[i] === PCT || b[i] === PLUS) {
        // An encoded name (`x%2Dseries`) means the same as the plain one to URLSearchParams.
        nameBuf = Buffer.from(this.decode(b, ns, ne), 'utf8');
        ns = 0;
        ne = nameBuf.length;
        break;
      }
    }
    let prefixed = false;
    if (ne - ns > 2 && nameBuf[ns] === 0x78 /* x */ && nameBuf[ns + 1] === 0x2d /* - */) {
      prefixed = true;
      ns += 2;
    }
    const slot = paramSlot(nameBuf, ns, ne);
    if (slot < 0) return;
    if (prefixed) {
      if (this.xStart[slot]! < 0) {
        this.xStart[slot] = valueStart;
        this.xEnd[slot] = z;
      }
    } else if (this.bareStart[slot]! < 0) {
      this.bareStart[slot] = valueStart;
      this.bareEnd[slot] = z;
    }
  }

  /** URLSearchParams' decoding of `b[s, e)`. */
  decode(b: Buffer, s: number, e: number): string {
    let plain = true;
    for (let i = s; i < e; i++) {
      if (b[i] === PCT || b[i] === PLUS) {
        plain = false;
        break;
      }
    }
    if (plain) return (b as SlicingBuffer).utf8Slice(s, e);
    if (this.scratch.length < e - s) this.scratch = Buffer.allocUnsafe(2 * (e - s));
    const out = this.scratch;
    let n = 0;
    for (let i = s; i < e; i++) {
      const c = b[i]!;
      if (c === PLUS) out[n++] = 0x20;
      else if (c === PCT && i + 2 < e && hex(b[i + 1]!) >= 0 && hex(b[i + 2]!) >= 0) {
        out[n++] = hex(b[i + 1]!) * 16 + hex(b[i + 2]!);
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

function paramSlot(b: Buffer, s: number, e: number): number {
  const len = e - s;
  for (let i = 0; i < PARAM_BYTES.length; i++) {
    const p = PARAM_BYTES[i]!;
    if (p.length !== len) continue;
    let k = 0;
    while (k < len && b[s + k] === p[k]) k++;
    if (k === len) return i;
  }
  return -1;
}
