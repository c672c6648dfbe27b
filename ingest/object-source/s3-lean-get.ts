/**
 * GetObject without the SDK's per-request middleware: a run sends one GET per log object (16M a day
 * at the sizes in docs/scale.md), and the SDK's command path costs ~0.7 ms of CPU each, three times
 * what the request itself does. This is the same request, made from the SDK's own parts:
 * - the endpoint as the SDK resolved it (its first GetObject of the bucket, through the SDK, is
 *   watched: region, FIPS, dual-stack, path style, `AWS_ENDPOINT_URL_S3` all stay the SDK's rules);
 * - signed with the SDK's SigV4 signer (@smithy/signature-v4) and the client's credential chain
 *   (the SDK's memoized, refreshing provider) and hash;
 * - sent through the client's own HTTP handler (its keep-alive agent, sockets and timeouts);
 * - retried by the client's own retry strategy (the same attempts, backoff and retry quota), each
 *   failure classified by the SDK's own rules.
 * What it leaves out: response checksum validation (the SDK's WHEN_SUPPORTED asks S3 for a CRC and
 * checks it; the bytes come over TLS, and a log object that is cut short is seen by its listed size
 * and its records), and per-request user-agent and logger plumbing.
 */
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
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

/** The GetObject requests being learned from, by client: `bucket/key` to the request the SDK built (null until it has). */
const learning = new WeakMap<S3Client, Map<string, HttpRequest | null>>();

/**
 * The client's watch on its GetObjects, added to its own middleware stack once: before the client's
 * first GetObject (a client that caches its middleware resolves a command type's stack once), which
 * the S3 source does as it is made.
 */
export function watch(s3: S3Client): Map<string, HttpRequest | null> {
  let w = learning.get(s3);
  if (!w) {
    const mine = new Map<string, HttpRequest | null>();
    w = mine;
    learning.set(s3, mine);
    s3.middlewareStack.add((next, context) => async (args) => {
      const input = args.input as { Bucket?: string; Key?: string };
      const id = `${input.Bucket}/${input.Key}`;
      if (context.commandName === 'GetObjectCommand' && mine.has(id)) mine.set(id, args.request as HttpRequest);
      return next(args);
    }, { step: 'build', name: 'pingrollLearnEndpoint' });
  }
  return w;
}

export class LeanGet {
  private constructor(private readonly s3: S3Client, private readonly endpoint: ResolvedEndpoint, private readonly signer: SignatureV4,
    private readonly retry: RetryStrategyV2) {}

  /**
   * A lean getter for `bucket`, learning the endpoint from the SDK's own GetObject of `key` (whose
   * body is returned with it, so that request is not wasted). Null endpoint: the SDK's request did not
   * have the shape expected (`…/<encoded key>`); the caller keeps using the SDK.
   */
  static async learn(s3: S3Client, bucket: string, key: string): Promise<{ lean: LeanGet | null; body: AsyncIterable<Uint8Array> }> {
    // Watched from the client's own stack: pingroll's clients resolve their middleware once per command
    // type (cacheMiddleware), so a middleware added to one command's stack would never run.
    const watching = watch(s3);
    watching.set(`${bucket}/${key}`, null);
    let seen: HttpRequest | null | undefined;
    let r;
    try {
      r = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    } finally {
      seen = watching.get(`${bucket}/${key}`);
      watching.delete(`${bucket}/${key}`);
    }
    const body = r.Body as AsyncIterable<Uint8Array>;
    const suffix = `/${encodeKey(key)}`;
    if (!seen || !seen.path.endsWith(suffix)) return { lean: null, body };
    const config = s3.config;
    const region = await config.region();
    const signer = new SignatureV4({ credentials: config.credentials, region, service: 's3', sha256: config.sha256, uriEscapePath: false, applyChecksum: false });
    const retry = (await config.retryStrategy()) as RetryStrategyV2;
    if (typeof retry.acquireInitialRetryToken !== 'function') return { lean: null, body };
    return {
      lean: new LeanGet(s3, { protocol: seen.protocol, hostname: seen.hostname, ...(seen.port ? { port: seen.port } : {}), pathPrefix: seen.path.slice(0, -suffix.length + 1) }, signer, retry),
      body,
    };
  }

  /** The object's bytes, streamed; S3's errors as LeanS3Error (name = S3's code), retried as the SDK would. */
  async get(key: string): Promise<AsyncIterable<Uint8Array>> {
    const token = await this.retry.acquireInitialRetryToken('s3');
    let t: RetryToken = token;
    for (;;) {
      try {
        const body = await this.once(key);
        this.retry.recordSuccess(t);
        return body;
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

  private async once(key: string): Promise<AsyncIterable<Uint8Array>> {
    const { protocol, hostname, port, pathPrefix } = this.endpoint;
    const request = {
      method: 'GET', protocol, hostname, ...(port ? { port } : {}), path: pathPrefix + encodeKey(key), query: {},
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
    const code = /<Code>([^<]*)<\/Code>/.exec(xml)?.[1] ?? (response.statusCode === 404 ? 'NoSuchKey' : `HTTP${response.statusCode}`);
    const message = /<Message>([^<]*)<\/Message>/.exec(xml)?.[1] ?? `S3 answered ${response.statusCode}`;
    throw new LeanS3Error(code, message, response.statusCode);
  }
}
