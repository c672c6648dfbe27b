import { HeadBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { LocationError } from './location.js';

/**
 * The bucket of a location must exist and answer: one HeadBucket. `setting` names the configuration, for messages.
 * It is the first request a run sends there, so the SDK resolves its region and credentials for it:
 * none to be found is the configuration's error (exit 2), said here, before any work.
 */
export async function checkBucket(s3: S3Client, bucket: string, url: string, setting: string): Promise<void> {
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
  } catch (err) {
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status === 404) throw new LocationError(`the bucket ${bucket} does not exist; check ${setting} (${url}) and AWS_REGION`);
    if (status === 403) throw new LocationError(`access to the bucket ${bucket} is denied; check ${setting} (${url}) and the credentials' permissions`);
    const e = err as { name?: string; message?: string };
    if (e.name === 'CredentialsProviderError' || /Could not load credentials/i.test(e.message ?? '')) {
      throw new LocationError(`no AWS credentials found for ${setting}=${url}; set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or run where a role provides them), and run again`);
    }
    if (/^Region is missing/.test(e.message ?? '')) throw new LocationError(`no AWS region is set for ${setting}=${url}; set AWS_REGION (e.g. AWS_REGION=us-east-1), and run again`);
    throw err;
  }
}
