import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'deploy/test/**/*.test.ts'],
    // The build brought up to date with the source first: test/global-setup.ts.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two test files at a time at least: most of a file's time is spent waiting on the servers and
    // processes it starts (moto, DynamoDB Local, PostgreSQL, pingroll), so a second file uses the core
    // the first leaves idle (vitest's default on two cores is one).
    maxWorkers: Math.max(2, availableParallelism()),
  },
});
