/**
 * Publishing a day whole with its files staged and moved several at once: every file is staged
 * before the journal names them, and the manifest is moved into place alone, after every other file.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { publishWhole, journalKey } from '../../export/publish-journal.js';
import { TABLES } from '../../rollup/rules.js';
import { outputKey, type OutputFile } from '../../rollup/output-file.js';
import { dayManifestKey } from '../../datasets/layout.js';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import type { ObjectStore } from '../../state/object-store/object-store.js';
import { tempRoots } from '../support/job-fixture.js';

const root = tempRoots();
const DAY = '2026-11-01';
/** A turn of the event loop: the call stays in flight while others start. */
const yieldTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('publishing a day whole', () => {
  it('stages every file before the journal, moves the tables side by side and the manifest last, alone', async () => {
    const r = root();
    const inner = new DirectoryObjectStore(join(r, 'out'));
    const events: string[] = [];
    let putsInFlight = 0, mostPuts = 0, movesInFlight = 0, mostMoves = 0;
    const store = Object.assign(Object.create(inner) as ObjectStore, {
      put: async (key: string, body: Parameters<ObjectStore['put']>[1]) => {
        if (key === journalKey(DAY)) events.push('journal');
        mostPuts = Math.max(mostPuts, ++putsInFlight);
        await yieldTurn();
        await inner.put(key, body);
        putsInFlight--;
        if (key !== journalKey(DAY)) events.push(`staged ${key}`);
      },
      move: async (from: string, to: string) => {
        mostMoves = Math.max(mostMoves, ++movesInFlight);
        events.push(`start ${to}`);
        await yieldTurn();
        await inner.move(from, to);
        movesInFlight--;
        events.push(`end ${to}`);
      },
    });
    const tables: OutputFile[] = [];
    for (const table of TABLES) {
      const local = join(r, `${table}.parquet`);
      await writeFile(local, table);
      tables.push({ table, key: outputKey(table, DAY), rows: 1, bytes: table.length, local });
    }
    let loaded: string[] = [];
    await publishWhole(store, { run: 'run-1', day: DAY, tables, others: [{ key: dayManifestKey(DAY), body: Buffer.from('{}') }] },
      async (_day, files) => { loaded = files.map((f) => f.table); });

    expect(loaded).toEqual([...TABLES]);
    // Several at once, both ways.
    expect(mostPuts).toBeGreaterThan(1);
    expect(mostMoves).toBeGreaterThan(1);
    // Every file staged before the journal was written.
    const journal = events.indexOf('journal');
    expect(events.slice(0, journal).filter((e) => e.startsWith('staged ')).length).toBe(TABLES.length + 1);
    // The manifest's move starts after every table's has ended, and is the last.
    const manifestStart = events.indexOf(`start ${dayManifestKey(DAY)}`);
    for (const table of TABLES) expect(events.indexOf(`end ${outputKey(table, DAY)}`)).toBeLessThan(manifestStart);
    expect(events.at(-1)).toBe(`end ${dayManifestKey(DAY)}`);
    // Everything in place, nothing left staged or journalled.
    for (const table of TABLES) expect((await inner.get(outputKey(table, DAY)))!.toString()).toBe(table);
    expect(await inner.get(journalKey(DAY))).toBeNull();
    expect((await inner.list('_state/publish/')).length).toBe(0);
  });
});
