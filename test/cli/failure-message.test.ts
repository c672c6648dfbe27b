/**
 * The one line each kind of failure ends in. (The CLI tests meet the ones a test can cause for real;
 * permission errors cannot be, as root, nor DuckDB running out of memory, cheaply.)
 */
import { describe, expect, it } from 'vitest';
import { failureLine } from '../../cli/failure-message.js';

const errno = (code: string, extra: Record<string, unknown> = {}): Error => Object.assign(new Error(`${code}: raw text`), { code, ...extra });

describe('failure lines', () => {
  it.each([
    [errno('EACCES', { path: '/var/logs/x.gz' }), 'permission denied: /var/logs/x.gz; give the user that runs pingroll access to it, and run again'],
    [errno('ENOTDIR', { path: '/data/out/_state' }), '/data/out/_state is not a directory (a file stands where a directory should be); check PINGROLL_LOGS and PINGROLL_OUTPUT'],
    [errno('ENAMETOOLONG', { path: `/logs/${'d/'.repeat(3000)}` }), `a path is longer than this system allows: /logs/${'d/'.repeat(47)}...${'d/'.repeat(50)}; move what is nested that deep out of PINGROLL_LOGS (or shorten PINGROLL_OUTPUT or TMPDIR) and run again`],
    [errno('ENOSPC', { path: '/data/out/x.parquet' }), 'the disk is full (writing /data/out/x.parquet); free space under TMPDIR and PINGROLL_OUTPUT and run again (nothing of the day was replaced)'],
    [errno('ECONNREFUSED', { address: '10.0.0.9', port: 4566 }), 'cannot reach 10.0.0.9:4566 (ECONNREFUSED); check the endpoint settings (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_DYNAMODB, ...) and the network, and run again'],
    [Object.assign(new Error('The specified bucket does not exist'), { name: 'NoSuchBucket', BucketName: 'rollups' }), 'the bucket rollups does not exist (The specified bucket does not exist); check the bucket in PINGROLL_LOGS and PINGROLL_OUTPUT, and the region'],
    [new Error('Out of Memory Error: failed to allocate data of size 16.0 MiB (1.8 GiB/1.8 GiB used)\n\nPossible solutions:\n* Reducing the number of threads'), 'DuckDB ran out of memory (failed to allocate data of size 16.0 MiB (1.8 GiB/1.8 GiB used)); raise PINGROLL_MEMORY_LIMIT or give the machine more memory, and run again'],
    [new Error('first line\nsecond line'), 'first line'],
  ])('%s', (err, line) => {
    expect(failureLine(err)).toBe(line);
    expect(line).not.toContain('\n');
  });
});
