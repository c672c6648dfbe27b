import { GetObjectCommand, HeadBucketCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { LocationError } from '../../lib/location.js';
import type { ObjectRef, ObjectSource } from './object-source.js';

/**
 * Log objects under `s3://bucket/prefix/`: listed page by page (ListObjectsV2 returns keys in order,
 * 1000 at a time, so the listing is never held whole), read as streams.
 */
export class S3ObjectSource implements ObjectSource {
  /** @param pageSize keys per ListObjectsV2 page (S3's own maximum is 1000). */
  constructor(private readonly s3: S3Client, private readonly bucket: string, private readonly prefix: string,
    private readonly pageSize = 1000) {}

  /** The bucket must exist and answer: one HeadBucket. */
  async check(): Promise<void> {
    try {
      await this.s3.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 404) throw new LocationError(`the bucket ${this.bucket} does not exist; check PINGROLL_LOGS (${this.url}) and AWS_REGION`);
      if (status === 403) throw new LocationError(`access to the bucket ${this.bucket} is denied; check PINGROLL_LOGS (${this.url}) and the credentials' permissions`);
      throw err;
    }
  }

  get url(): string {
    return `s3://${this.bucket}/${this.prefix}`;
  }

  async *list(): AsyncIterable<ObjectRef> {
    let token: string | undefined;
    do {
      const page = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix, ContinuationToken: token, MaxKeys: this.pageSize }));
      for (const o of page.Contents ?? []) {
        if (!o.Key || o.Key.endsWith('/')) continue;
        yield { key: o.Key.slice(this.prefix.length), size: o.Size ?? 0, etag: (o.ETag ?? '').replace(/"/g, '') };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async open(ref: ObjectRef): Promise<AsyncIterable<Uint8Array>> {
    const r = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + ref.key }));
    return r.Body as AsyncIterable<Uint8Array>;
  }
}
