import { HeadBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { LocationError } from './location.js';

/** The bucket of a location must exist and answer: one HeadBucket. `setting` names the configuration, for messages. */
export async function checkBucket(s3: S3Client, bucket: string, url: string, setting: string): Promise<void> {
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
  } catch (err) {
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status === 404) throw new LocationError(`the bucket ${bucket} does not exist; check ${setting} (${url}) and AWS_REGION`);
    if (status === 403) throw new LocationError(`access to the bucket ${bucket} is denied; check ${setting} (${url}) and the credentials' permissions`);
    throw err;
  }
}
