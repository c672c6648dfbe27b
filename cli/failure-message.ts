/**
 * Every failure as one line that says what to do: the errors operators meet (a path that is not
 * there, not a directory or not readable, a full disk, an endpoint that does not answer, a bucket that
 * does not exist, no AWS region or credentials, DuckDB out of memory) in words, anything else as the
 * first line of its message.
 */
export function failureLine(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { name?: string; BucketName?: string; address?: string; port?: number; hostname?: string; $metadata?: unknown };
  const message = String(e?.message ?? err);
  const first = message.split('\n')[0]!.trim();
  const where = e.path ? `${e.path}` : '';
  switch (e.code) {
    case 'ENOENT': return `no such file or directory: ${where || first}; check the path and run again`;
    case 'EACCES':
    case 'EPERM': return `permission denied: ${where || first}; give the user that runs pingroll access to it, and run again`;
    case 'ENOTDIR': return `${where || 'a path'} is not a directory (a file stands where a directory should be); check PINGROLL_LOGS and PINGROLL_OUTPUT`;
    case 'EISDIR': return `${where || 'a path'} is a directory where a file should be; check the path`;
    case 'ENAMETOOLONG': return `a path is longer than this system allows: ${shortened(where || first)}; move what is nested that deep out of PINGROLL_LOGS (or shorten PINGROLL_OUTPUT or TMPDIR) and run again`;
    case 'ENOSPC': return `the disk is full${where ? ` (writing ${where})` : ''}; free space under TMPDIR and PINGROLL_OUTPUT and run again (nothing of the day was replaced)`;
    case 'ECONNREFUSED':
    case 'ECONNRESET':
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENOTFOUND':
    case 'EAI_AGAIN': {
      const target = e.hostname ?? (e.address ? `${e.address}${e.port ? `:${e.port}` : ''}` : 'the service');
      return `cannot reach ${target} (${e.code}); check the endpoint settings (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_DYNAMODB, ...) and the network, and run again`;
    }
  }
  if (e.name === 'NoSuchBucket') return `the bucket ${e.BucketName ?? ''} does not exist (${first}); check the bucket in PINGROLL_LOGS and PINGROLL_OUTPUT, and the region`.replace('bucket  does', 'bucket does');
  if (e.name === 'CredentialsProviderError' || /Could not load credentials/i.test(first)) return 'no AWS credentials found; set AWS_PROFILE or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or run where a role provides them)';
  if (/^Region is missing/.test(first)) return 'no AWS region is set; set AWS_REGION (e.g. AWS_REGION=us-east-1) for the S3, DynamoDB and Redshift clients';
  if (/out of memory/i.test(first)) return `DuckDB ran out of memory (${first.replace(/^.*?Out of Memory Error:\s*/i, '')}); raise PINGROLL_MEMORY_LIMIT or give the machine more memory, and run again`;
  return first;
}

/** A path of thousands of characters, as its two ends. */
function shortened(path: string): string {
  return path.length <= 200 ? path : `${path.slice(0, 100)}...${path.slice(-100)}`;
}
