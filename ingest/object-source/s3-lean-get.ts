/**
 * GetObject without the SDK's per-request middleware: a run sends one GET per log object (16M a day
 * at the sizes in docs/scale.md), and the SDK's command path costs ~0.7 ms of CPU each, three times
 * what the request itself does. This is the same request, made from the SDK's own parts:
 * - the endpoint as the SDK resolved it (a source's first request to the bucket, its HeadBucket,
 *   ListObjectsV2 or GetObject through the SDK, is watched: region, FIPS, dual-stack, path style,
 *   `AWS_ENDPOINT_URL_S3` all stay the SDK's rules);
 * - signed with the SDK's SigV4 signer (@smithy/signature-v4) and the client's credential chain
 *   (the SDK's memoized, refreshing provider) and hash;
 * - sent through the client's own HTTP handler (its keep-alive agent, sockets and timeouts);
 * - retried by the client's own retry strategy (the same attempts, backoff and retry quota), each
 *   failure classified by the SDK's own rules.
 * What it leaves out: response checksum validation (the SDK's WHEN_SUPPORTED asks S3 for a CRC and
 * checks it; the bytes come over TLS, and a log object that is cut short is seen by its listed size
 * and its records), and per-request user-agent and logger plumbing.
 *
 * ListObjectsV2 goes the same way (`list`), its answer read by `listPage`: the SDK's XML parser, its
 * schema walk and its log filter cost ~0.1 ms a listed key (100 ms a page of 1,000), which at 16M
 * objects a day is more CPU than the reads themselves; the fields a listing needs are read from the
 * XML directly, ~1 µs a key.
 */
import { GetObjectCommand, type ListObjectsV2CommandInput, type S3Client } from '@aws-sdk/client-s3';
import { isServerError, isThrottlingError, isTransientError } from '@smithy/core/retry';
import { SignatureV4 } from '@smithy/signature-v4';
import type { HttpRequest, HttpResponse, RetryErrorInfo, RetryStrategyV2, RetryToken, SdkError } from '@smithy/types';

/** Where a bucket's objects are, as the SDK resolved it: the request for key `k` is `pathPrefix + encode(k)`. */
interface ResolvedEndpoint {
  protocol: string;
  hostname: string;
  port?: number;
  pathPrefix: string;
}

/** An S3 error as the SDK shapes it, enough for pingroll's callers: its code as `name`, its status. */
export class LeanS3Error extends Error {
  readonly $metadata: { httpStatusCode: number };
  constructor(name: string, message: string, status: number) {
    super(message);
    this.name = name;
    this.$metadata = { httpStatusCode: status };
  }
}

/** S3's key encoding in a path (the SDK's extendedEncodeURIComponent, `/` kept). */
export function encodeKey(key: string): string {
  return key.split('/').map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)).join('/');
}

/** How the SDK's retry middleware classifies a failure (its own functions, so the same errors retry). */
function errorType(err: unknown): RetryErrorInfo['errorType'] {
  const e = err as SdkError;
  if (isThrottlingError(e)) return 'THROTTLING';
  if (isTransientError(e)) return 'TRANSIENT';
  return isServerError(e) ? 'SERVER_ERROR' : 'CLIENT_ERROR';
}

/** The text of a small error body (S3's XML), at most 4 KiB read. */
async function errorBody(body: AsyncIterable<Uint8Array> | undefined): Promise<string> {
  if (!body) return '';
  const parts: Buffer[] = [];
  let n = 0;
  for await (const c of body) {
    if (n < 4096) parts.push(Buffer.from(c));
    n += c.length;
  }
  return Buffer.concat(parts).toString('utf8').slice(0, 4096);
}

/** The requests being learned from, by client: `bucket/key` (a GetObject) or `bucket?root` (a request to the bucket itself) to the request the SDK built (null until it has). */
const learning = new WeakMap<S3Client, Map<string, HttpRequest | null>>();

/** What `learning` calls a request to the bucket itself: a ListObjectsV2 or a HeadBucket. */
const rootId = (bucket: string): string => `${bucket}?root`;

/**
 * The client's watch on its GetObjects and ListObjectsV2s, added to its own middleware stack once:
 * before the client's first of them (a client that caches its middleware resolves a command type's
 * stack once), which the S3 source does as it is made.
 */
export function watch(s3: S3Client): Map<string, HttpRequest | null> {
  let w = learning.get(s3);
  if (!w) {
    const mine = new Map<string, HttpRequest | null>();
    w = mine;
    learning.set(s3, mine);
    s3.middlewareStack.add((next, context) => async (args) => {
      const input = args.input as { Bucket?: string; Key?: string };
      const id = context.commandName === 'GetObjectCommand' ? `${input.Bucket}/${input.Key}`
        : context.commandName === 'ListObjectsV2Command' || context.commandName === 'HeadBucketCommand' ? rootId(String(input.Bucket)) : null;
      if (id !== null && mine.has(id)) mine.set(id, args.request as HttpRequest);
      return next(args);
    }, { step: 'build', name: 'pingrollLearnEndpoint' });
  }
  return w;
}

/** One ListObjectsV2 request's parameters, as the SDK names them. */
export type ListInput = Pick<ListObjectsV2CommandInput, 'Prefix' | 'Delimiter' | 'StartAfter' | 'ContinuationToken' | 'MaxKeys'>;

/** What a listing needs of a ListObjectsV2 page, named as the SDK's output names it (so either can be read the same way). */
export interface ListPage {
  Contents: Array<{ Key: string; Size: number; ETag: string }>;
  CommonPrefixes: Array<{ Prefix: string }>;
  IsTruncated: boolean;
  NextContinuationToken?: string;
}

/**
 * A listed object's entry, or an error for one with no key or no size (`shown`: the entry as the answer
 * gave it). Both ways of reading a listing refuse it: a fetch brings no more than the listed size
 * (ParseTask.maxBytes), so a size taken as 0 would quarantine the object as changed after its listing
 * at every run.
 */
function listedEntry(key: string | undefined, size: number | undefined, etag: string, shown: () => string): ListPage['Contents'][number] {
  if (key === undefined || size === undefined || !Number.isSafeInteger(size) || size < 0) throw new Error(`a ListObjectsV2 answer with a <Contents> that has no Key or Size: ${shown()}`);
  return { Key: key, Size: size, ETag: etag };
}

/** The SDK's output of a ListObjectsV2 as a ListPage (an entry with no key or size refused: `listedEntry`). */
export function sdkListPage(page: { Contents?: Array<{ Key?: string; Size?: number; ETag?: string }>; CommonPrefixes?: Array<{ Prefix?: string }>; IsTruncated?: boolean; NextContinuationToken?: string }): ListPage {
  return {
    Contents: (page.Contents ?? []).map((o) => listedEntry(o.Key, o.Size, o.ETag ?? '', () => JSON.stringify(o).slice(0, 200))),
    CommonPrefixes: (page.CommonPrefixes ?? []).map((p) => ({ Prefix: p.Prefix ?? '' })),
    IsTruncated: page.IsTruncated === true,
    ...(page.NextContinuationToken !== undefined ? { NextContinuationToken: page.NextContinuationToken } : {}),
  };
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** XML character data as text: the five named entities and numeric character references decoded. */
function xmlText(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(/&(?:#x([0-9a-fA-F]+)|#([0-9]+)|(amp|lt|gt|quot|apos));/g, (_, hex: string | undefined, dec: string | undefined, name: string | undefined) =>
    (hex !== undefined ? String.fromCodePoint(parseInt(hex, 16)) : dec !== undefined ? String.fromCodePoint(Number(dec)) : ENTITIES[name!]!));
}

/** An element's opening and closing tags, made once (`element` runs for every field of every listed key). */
interface Tag { open: string; close: string }
const tag = (name: string): Tag => ({ open: `<${name}>`, close: `</${name}>` });
const KEY = tag('Key'), SIZE = tag('Size'), ETAG = tag('ETag'), CONTENTS = tag('Contents'), COMMON_PREFIXES = tag('CommonPrefixes'), PREFIX = tag('Prefix'),
  IS_TRUNCATED = tag('IsTruncated'), NEXT_TOKEN = tag('NextContinuationToken');

/** The text of the first `t` in `xml` from `from` up to `to`; undefined when there is none. */
function element(xml: string, t: Tag, from = 0, to = xml.length): string | undefined {
  const open = xml.indexOf(t.open, from);
  if (open < 0 || open >= to) return undefined;
  const at = open + t.open.length;
  const close = xml.indexOf(t.close, at);
  if (close < 0 || close > to) throw new Error(`a ListObjectsV2 answer with an unclosed ${t.open}`);
  return xml.slice(at, close);
}

/** The spans of each `t` in `xml`, in order: [start of its opening tag, start of its closing tag]. */
function* spans(xml: string, t: Tag): Generator<[number, number]> {
  for (let at = xml.indexOf(t.open); at >= 0; at = xml.indexOf(t.open, at)) {
    const end = xml.indexOf(t.close, at);
    if (end < 0) throw new Error(`a ListObjectsV2 answer with an unclosed ${t.open}`);
    yield [at, end];
    at = end;
  }
}

/**
 * A ListObjectsV2 answer (S3's `ListBucketResult`, as S3 and moto write it: no CDATA, keys as XML
 * text, not URL-encoded since pingroll does not ask for that) as a ListPage: each `<Contents>`'s Key,
 * Size and ETag and each `<CommonPrefixes>`'s Prefix in the order S3 gave them, IsTruncated and
 * NextContinuationToken. Anything else is an error, never an empty page.
 */
export function listPage(xml: string): ListPage {
  if (!/^(?:<\?xml[^>]*\?>)?\s*<ListBucketResult[\s>]/.test(xml)) throw new Error(`S3 answered a ListObjectsV2 with no ListBucketResult: ${JSON.stringify(xml.slice(0, 120))}`);
  const page: ListPage = { Contents: [], CommonPrefixes: [], IsTruncated: false };
  // Each entry's fields are looked for between its own tags only.
  for (const [at, end] of spans(xml, CONTENTS)) {
    const key = element(xml, KEY, at, end);
    page.Contents.push(listedEntry(key === undefined ? undefined : xmlText(key), Number(element(xml, SIZE, at, end)), xmlText(element(xml, ETAG, at, end) ?? ''),
      () => JSON.stringify(xml.slice(at, Math.min(end, at + 200)))));
  }
  for (const [at, end] of spans(xml, COMMON_PREFIXES)) {
    const prefix = element(xml, PREFIX, at, end);
    if (prefix !== undefined) page.CommonPrefixes.push({ Prefix: xmlText(prefix) });
  }
  // Text in XML holds no `<` (it is written `&lt;`): no key can pass for the page's own fields.
  page.IsTruncated = element(xml, IS_TRUNCATED) === 'true';
  const token = element(xml, NEXT_TOKEN);
  if (token !== undefined) page.NextContinuationToken = xmlText(token);
  return page;
}

/** The largest ListObjectsV2 answer read (S3's are ~0.3 MB a page of 1,000 keys of up to 1 KB). */
const MAX_LIST_BYTES = 16 << 20;

/** A body's bytes as UTF-8 text, at most `max` bytes. */
async function bodyText(body: AsyncIterable<Uint8Array>, max: number): Promise<string> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const c of body) {
    n += c.length;
    if (n > max) throw new Error(`S3 answered a ListObjectsV2 with more than ${max} bytes`);
    parts.push(Buffer.from(c.buffer, c.byteOffset, c.length));
  }
  return Buffer.concat(parts, n).toString('utf8');
}

export class LeanGet {
  /** @param bucket the bucket whose requests these are (which the endpoint names). */
  private constructor(private readonly s3: S3Client, readonly bucket: string, private readonly endpoint: ResolvedEndpoint, private readonly signer: SignatureV4,
    private readonly retry: RetryStrategyV2) {}

  /** A lean getter for `bucket` at the endpoint of `seen` (a request the SDK built), whose objects' paths start `pathPrefix`; null when the client's retry strategy is not one it can drive. */
  private static async at(s3: S3Client, bucket: string, seen: HttpRequest, pathPrefix: string): Promise<LeanGet | null> {
    const config = s3.config;
    const region = await config.region();
    const signer = new SignatureV4({ credentials: config.credentials, region, service: 's3', sha256: config.sha256, uriEscapePath: false, applyChecksum: false });
    const retry = (await config.retryStrategy()) as RetryStrategyV2;
    if (typeof retry.acquireInitialRetryToken !== 'function') return null;
    return new LeanGet(s3, bucket, { protocol: seen.protocol, hostname: seen.hostname, ...(seen.port ? { port: seen.port } : {}), pathPrefix }, signer, retry);
  }

  /**
   * `send` (a request of the SDK's), with the request the SDK built for it under `id` in the client's
   * watch. Watched from the client's own stack: pingroll's clients resolve their middleware once per
   * command type (cacheMiddleware), so a middleware added to one command's stack would never run.
   */
  private static async watched<T>(s3: S3Client, id: string, send: () => Promise<T>): Promise<{ seen: HttpRequest | null; out: T }> {
    const watching = watch(s3);
    watching.set(id, null);
    try {
      const out = await send();
      return { seen: watching.get(id) ?? null, out };
    } finally {
      watching.delete(id);
    }
  }

  /**
   * A lean getter for `bucket`, learning the endpoint from the SDK's own GetObject of `key` (whose
   * body is returned with it, so that request is not wasted). Null endpoint: the SDK's request did not
   * have the shape expected (`…/<encoded key>`); the caller keeps using the SDK.
   */
  static async learn(s3: S3Client, bucket: string, key: string): Promise<{ lean: LeanGet | null; out: AsyncIterable<Uint8Array> }> {
    const { seen, out } = await LeanGet.watched(s3, `${bucket}/${key}`, async () => (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body as AsyncIterable<Uint8Array>);
    const suffix = `/${encodeKey(key)}`;
    if (!seen || !seen.path.endsWith(suffix)) return { lean: null, out };
    return { lean: await LeanGet.at(s3, bucket, seen, seen.path.slice(0, -suffix.length + 1)), out };
  }

  /**
   * The same, learning from a request of the SDK's to the bucket itself, `send` (a ListObjectsV2 or a
   * HeadBucket, whose result is returned with it). Its path is the bucket's own (`/bucket/` path style,
   * `/` by virtual host): the prefix of its objects' paths, and a listing's path. Null: the SDK's
   * request did not end in `/`.
   */
  static async learnRoot<T>(s3: S3Client, bucket: string, send: () => Promise<T>): Promise<{ lean: LeanGet | null; out: T }> {
    const { seen, out } = await LeanGet.watched(s3, rootId(bucket), send);
    if (!seen || !seen.path.endsWith('/')) return { lean: null, out };
    return { lean: await LeanGet.at(s3, bucket, seen, seen.path), out };
  }

  /** The object's bytes, streamed; S3's errors as LeanS3Error (name = S3's code), retried as the SDK would. */
  get(key: string): Promise<AsyncIterable<Uint8Array>> {
    return this.retried(() => this.once(this.endpoint.pathPrefix + encodeKey(key), {}));
  }

  /** One ListObjectsV2 page of the bucket, as `listPage` reads it; errors and retries as `get`'s (a page cut short is asked for again). */
  list(input: ListInput): Promise<ListPage> {
    const query: Record<string, string> = { 'list-type': '2' };
    if (input.Prefix !== undefined) query.prefix = input.Prefix;
    if (input.Delimiter !== undefined) query.delimiter = input.Delimiter;
    if (input.StartAfter !== undefined) query['start-after'] = input.StartAfter;
    if (input.ContinuationToken !== undefined) query['continuation-token'] = input.ContinuationToken;
    if (input.MaxKeys !== undefined) query['max-keys'] = String(input.MaxKeys);
    return this.retried(async () => listPage(await bodyText(await this.once(this.endpoint.pathPrefix, query), MAX_LIST_BYTES)));
  }

  /** `attempt` until it succeeds, as the client's retry strategy says (its attempts, backoff and quota). */
  private async retried<T>(attempt: () => Promise<T>): Promise<T> {
    const token = await this.retry.acquireInitialRetryToken('s3');
    let t: RetryToken = token;
    for (;;) {
      try {
        const out = await attempt();
        this.retry.recordSuccess(t);
        return out;
      } catch (err) {
        let next: RetryToken;
        try {
          next = await this.retry.refreshRetryTokenForRetry(t, { errorType: errorType(err) });
        } catch {
          throw err;
        }
        await new Promise((resolve) => setTimeout(resolve, next.getRetryDelay()));
        t = next;
      }
    }
  }

  private async once(path: string, query: Record<string, string>): Promise<AsyncIterable<Uint8Array>> {
    const { protocol, hostname, port } = this.endpoint;
    const request = {
      method: 'GET', protocol, hostname, ...(port ? { port } : {}), path, query,
      headers: { host: port ? `${hostname}:${port}` : hostname, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } as Record<string, string>,
    };
    // The SDK's clock offset (it corrects it when S3 says the clock is skewed), as its own signing does.
    const offset = (this.s3.config as { systemClockOffset?: number }).systemClockOffset ?? 0;
    const signed = (await this.signer.sign(request as unknown as HttpRequest, { signingDate: new Date(Date.now() + offset) })) as HttpRequest;
    const { response } = (await this.s3.config.requestHandler.handle(signed as never)) as { response: HttpResponse };
    const body = response.body as AsyncIterable<Uint8Array> | undefined;
    if (response.statusCode >= 200 && response.statusCode < 300) return body ?? (async function* () {})();
    const xml = await errorBody(body);
    // A skewed clock: take S3's time as the SDK does, so the retry (and every later request) signs right.
    const serverDate = Date.parse(String(response.headers.date ?? response.headers.Date ?? ''));
    if (/<Code>(RequestTimeTooSkewed|RequestExpired)<\/Code>/.test(xml) && Number.isFinite(serverDate)) {
      (this.s3.config as { systemClockOffset?: number }).systemClockOffset = serverDate - Date.now();
      throw Object.assign(new LeanS3Error('RequestTimeTooSkewed', 'the clock was skewed; corrected from S3\'s Date', response.statusCode), { $retryable: {} });
    }
    const code = /<Code>([^<]*)<\/Code>/.exec(xml)?.[1] ?? (response.statusCode === 404 ? ('list-type' in query ? 'NoSuchBucket' : 'NoSuchKey') : `HTTP${response.statusCode}`);
    const message = /<Message>([^<]*)<\/Message>/.exec(xml)?.[1] ?? `S3 answered ${response.statusCode}`;
    throw new LeanS3Error(code, message, response.statusCode);
  }
}
