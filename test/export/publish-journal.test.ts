/**
 * Publishing a day whole with its files staged and moved several at once: every file is staged
 * before the journal names them, and the manifest is moved into place alone, after every other file.
 * A run's publisher keeps the manifests it read, and reads a day's again once it publishes the day.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { publishWhole, journalKey } from '../../export/publish-journal.js';
import { DayPublisher } from '../../export/publisher.js';
import type { DayManifest } from '../../export/manifest.js';
import { memoryLog } from '../../lib/log.js';
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

describe("a run's manifests", () => {
  it('are read from the store once each, until the run publishes the day, completes a killed publication, or a read fails', async () => {
    const r = root();
    const inner = new DirectoryObjectStore(join(r, 'out'));
    const gets: string[] = [];
    let failNext = false;
    const store = Object.assign(Object.create(inner) as ObjectStore, {
      get: async (key: string) => {
        if (key === dayManifestKey(DAY) || key === dayManifestKey('2026-11-02')) {
          gets.push(key);
          if (failNext) {
            failNext = false;
            throw new Error('S3 said 503');
          }
        }
        return inner.get(key);
      },
    });
    const manifest = (pings: number): DayManifest => ({ day: DAY, pings, state: 'complete' }) as unknown as DayManifest;
    const put = (pings: number): Promise<void> => inner.put(dayManifestKey(DAY), Buffer.from(JSON.stringify(manifest(pings))));
    const publisher = new DayPublisher({ run: 'run-1', store, warehouse: null, workDir: r, log: memoryLog() });
    const { manifests } = publisher;
    const pingsOf = async (): Promise<number | undefined> => (await manifests.read(DAY))?.pings;

    await put(1);
    const first = (await manifests.read(DAY))!;
    expect(first.pings).toBe(1);
    // What a caller does to the manifest it was given is not what the next reads.
    first.pings = 99;
    expect(await pingsOf()).toBe(1);
    expect(await manifests.read('2026-11-02')).toBeNull();
    expect(await manifests.read('2026-11-02')).toBeNull();
    expect(gets).toEqual([dayManifestKey(DAY), dayManifestKey('2026-11-02')]);

    // Another writer (none may, under the run lock) is not seen: the kept manifest stands.
    await put(2);
    expect(await pingsOf()).toBe(1);

    // The run publishes the day: the next read is the store's.
    const local = join(r, 'daily_runs.parquet');
    await writeFile(local, 'runs');
    await publisher.publishDay({ day: DAY, outputs: [{ table: 'daily_runs', key: outputKey('daily_runs', DAY), rows: 1, bytes: 4, local }], loaded: true, rejects: null, manifest: manifest(3) });
    expect(await pingsOf()).toBe(3);
    await publisher.publishState(DAY, { table: 'daily_runs', key: outputKey('daily_runs', DAY), rows: 1, bytes: 4, local }, manifest(4));
    expect(await pingsOf()).toBe(4);
    expect(gets.length).toBe(4);

    // Completing what a killed run left may put any day's manifest in place: every kept one goes.
    await put(5);
    await publisher.recover();
    expect(await pingsOf()).toBe(5);

    // A read that failed is not kept.
    publisher.manifests.forget(DAY);
    failNext = true;
    await expect(manifests.read(DAY)).rejects.toThrow(/503/);
    expect(await pingsOf()).toBe(5);
    expect(gets.length).toBe(7);
  });
});
