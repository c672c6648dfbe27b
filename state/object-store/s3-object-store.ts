import { randomBytes } from 'node:crypto';
import { WRITE_PROBE } from '../../datasets/layout.js';
import { createReadStream, createWriteStream } from 'node:fs';
import { checkBucket } from '../../lib/s3-bucket.js';
import { bounded } from '../../lib/location.js';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import {
  CopyObjectCommand, DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client,
} from '@aws-sdk/client-s3';
import type { LocalFile, ObjectStore } from './object-store.js';

/** An output store under `s3://bucket/prefix/`. A PutObject replaces an object atomically. */
export class S3ObjectStore implements ObjectStore {
  /** Objects over the network: downloaded to be read. */
  readonly local = false;

  constructor(private readonly s3: S3Client, private readonly bucket: string, private readonly prefix: string) {}

  /** No object is a local file. */
  localFile(_key: string): null {
    return null;
  }

  /** S3 has no folders to remove. */
  async prune(_prefix: string): Promise<void> {}

  /** A PutObject is whole or nothing: a write killed midway leaves nothing. */
  async removeTemporaries(): Promise<number> {
    return 0;
  }

  check(): Promise<void> {
    return checkBucket(this.s3, this.bucket, this.url, 'PINGROLL_OUTPUT');
  }

  async checkWritable(): Promise<void> {
    const key = `${this.prefix}${WRITE_PROBE}${randomBytes(6).toString('hex')}`;
    await bounded(async () => {
      await this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: Buffer.alloc(0) }));
      await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    }, (reason) => `cannot write to ${this.url} (${reason}); check PINGROLL_OUTPUT and that the credentials may put and delete objects under it`);
  }

  get url(): string {
    return `s3://${this.bucket}/${this.prefix}`;
  }

  async get(key: string): Promise<Buffer | null> {
    try {
      const r = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }));
      return Buffer.from(await r.Body!.transformToByteArray());
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async getRange(key: string, start: number, end: number): Promise<Buffer | null> {
    if (end <= start) return Buffer.alloc(0);
    try {
      const r = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key, Range: `bytes=${start}-${end - 1}` }));
      return Buffer.from(await r.Body!.transformToByteArray());
    } catch (err) {
      if (isMissing(err)) return null;
      // A range that starts past the end (416): nothing there.
      if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 416) return Buffer.alloc(0);
      throw err;
    }
  }

  async put(key: string, body: Buffer | LocalFile, tags?: Record<string, string>): Promise<void> {
    const input = Buffer.isBuffer(body)
      ? { Body: body }
      : { Body: createReadStream(body.file), ContentLength: (await stat(body.file)).size };
    // A move (CopyObject) keeps the tags: TaggingDirective COPY is S3's default.
    await this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.prefix + key, ...input, ...(tags ? { Tagging: new URLSearchParams(tags).toString() } : {}) }));
  }

  /** An empty object, put as any other (ObjectStore.putMarker: S3 has no sync to spare). */
  async putMarker(key: string): Promise<void> {
    await this.put(key, Buffer.alloc(0));
  }

  /** A put as any other (ObjectStore.putUnsynced: S3 has no sync to spare). */
  async putUnsynced(key: string, body: Buffer): Promise<void> {
    await this.put(key, body);
  }

  /** A conditional write (If-None-Match: *), which S3 has honoured since 2024. */
  async putIfAbsent(key: string, body: Buffer): Promise<boolean> {
    try {
      await this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.prefix + key, Body: body, IfNoneMatch: '*' }));
      return true;
    } catch (err) {
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 412 || status === 409) return false;
      throw err;
    }
  }

  async list(prefix: string): Promise<string[]> {
    const out: string[] = [];
    let token: string | undefined;
    do {
      const r = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix + prefix, ContinuationToken: token }));
      for (const o of r.Contents ?? []) if (o.Key) out.push(o.Key.slice(this.prefix.length));
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
    return out.sort();
  }

  /** A server-side copy, then a delete: the object under `to` is replaced whole by the copy. */
  async move(from: string, to: string): Promise<void> {
    await this.s3.send(new CopyObjectCommand({ Bucket: this.bucket, Key: this.prefix + to, CopySource: encodeURI(`${this.bucket}/${this.prefix}${from}`) }));
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.prefix + from }));
  }

  async delete(key: string): Promise<void> {
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }));
  }

  async download(key: string, file: string): Promise<void> {
    const r = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }));
    await pipeline(r.Body as Readable, createWriteStream(file));
  }

  async size(key: string): Promise<number | null> {
    try {
      const r = await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }));
      return r.ContentLength ?? null;
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }
}

function isMissing(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
}
