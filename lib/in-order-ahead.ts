/**
 * The items of `parts` in order, part after part, as `for (const p of parts) yield* p()` gives them,
 * with each part started up to `ahead - 1` parts before its turn: a part started early runs to its
 * first item and waits there. For listings whose every page is a round trip (an S3 prefix a part),
 * the first pages of the next parts are fetched while the current one is read, and no part holds
 * more than the page it is on.
 *
 * A part that fails early fails at its turn, as it would have, and not before. When the caller stops
 * (a break, a failure of its own or of a part), the parts started ahead are closed once their first
 * step has ended: nothing of them is left running.
 */
export async function* inOrderAhead<T>(parts: ReadonlyArray<() => AsyncIterable<T>>, ahead: number): AsyncGenerator<T> {
  const started: Array<{ it: AsyncIterator<T>; first: Promise<IteratorResult<T>> } | undefined> = [];
  const start = (i: number): void => {
    const it = parts[i]!()[Symbol.asyncIterator]();
    const first = it.next();
    // Its failure is thrown at its turn (awaited below); until then it is not an unhandled rejection.
    first.catch(() => {});
    started[i] = { it, first };
  };
  const lead = Math.max(1, ahead);
  let next = 0;
  let current: AsyncIterator<T> | null = null;
  try {
    for (let i = 0; i < parts.length; i++) {
      while (next < parts.length && next < i + lead) start(next++);
      const { it, first } = started[i]!;
      started[i] = undefined;
      current = it;
      for (let r = await first; !r.done; r = await it.next()) yield r.value;
      current = null;
    }
  } finally {
    if (current) await close(current);
    for (const s of started) {
      if (!s) continue;
      await s.first.catch(() => undefined);
      await close(s.it);
    }
  }
}

/** Ends a part's iteration; a failure of its own while closing is not the one the caller is told of. */
async function close<T>(it: AsyncIterator<T>): Promise<void> {
  try {
    await it.return?.();
  } catch {
    // The first failure (the caller's, or the part's at its turn) is the one thrown.
  }
}
