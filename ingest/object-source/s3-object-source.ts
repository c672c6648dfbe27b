import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { checkBucket } from '../../lib/s3-bucket.js';
import type { ObjectRef, ObjectSource } from './object-source.js';

/**
 * Log objects under `s3://bucket/prefix/`: listed page by page (ListObjectsV2 returns keys in order,
 * 1000 at a time, so the listing is never held whole), read as streams.
 */
export class S3ObjectSource implements ObjectSource {
  /** @param pageSize keys per ListObjectsV2 page (S3's own maximum is 1000). */
  constructor(private readonly s3: S3Client, private readonly bucket: string, private readonly prefix: string,
    private readonly pageSize = 1000) {}

  check(): Promise<void> {
    return checkBucket(this.s3, this.bucket, this.url, 'PINGROLL_LOGS');
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
