import PQueue from 'p-queue';

/**
 * A store's calls (puts, moves, sizes, downloads) one step of a run makes at once: on S3 each waits
 * its round trip, on a disk its sync. The staging's, the compaction's, the gathering's and the
 * publication's.
 */
export const STORE_CALLS_AT_ONCE = 8;

/**
 * Runs `tasks`, at most `atOnce` at a time, and returns their results once every one has ended; the
 * first failure (in the tasks' order) is then thrown. (Promise.all returns at the first failure while
 * the others still write: a caller that cleans up, or lets the next step start, must know that
 * nothing is left writing.)
 */
export async function allEnded<T>(tasks: ReadonlyArray<() => Promise<T>>, atOnce: number): Promise<T[]> {
  const queue = new PQueue({ concurrency: atOnce });
  const done = await Promise.allSettled(tasks.map((task) => queue.add(task) as Promise<T>));
  const failed = done.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return done.map((r) => (r as PromiseFulfilledResult<T>).value);
}
