/**
 * A log file's path as the parser opens it (ingest/batch/object-parser.ts readFile): a key with no
 * folder in it is opened without following a link (its path is not looked up again), a key with
 * folders is checked where it was opened. Either way a link made since the listing reads nothing.
 */
import { mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../infra/config.js';
import { ObjectParser } from '../../../ingest/batch/object-parser.js';
import { generateSample, objectBody } from '../../../tools/sample/access-log-generator.js';
import { tempDir } from '../../support/job-fixture.js';

const DAY = '2026-11-01';

describe('a log file made a link after its listing', () => {
  const setUp = (): { parser: ObjectParser; logs: string; outside: string; body: Buffer; parts: string[] } => {
    const root = tempDir();
    const logs = join(root, 'logs'), outside = join(root, 'outside');
    mkdirSync(logs);
    mkdirSync(outside);
    const body = objectBody(generateSample({ date: DAY, sessions: 5, seed: 61, truth: true, recordsPerObject: 40 }).objects[0]!);
    writeFileSync(join(outside, 'real.log'), body);
    const parts: string[] = [];
    const parser = new ObjectParser({ pingKeys: loadConfig({}).pingKeys, dir: tempDir(), name: 'rows', partBytes: 1 << 20, onPart: (p) => parts.push(p) });
    return { parser, logs, outside, body, parts };
  };

  it('reads a file whose key names no folder, and not a link put in its place', () => {
    const { parser, logs, outside, body, parts } = setUp();
    const key = `${DAY}-10-00-00-FLAT`;
    writeFileSync(join(logs, key), body);
    const task = { index: 0, key, day: DAY, file: join(logs, key), within: realpathSync(logs), size: body.length };
    const read = parser.parse(task);
    expect(read.unreadable).toBeUndefined();
    expect(read.records).toBeGreaterThan(0);
    // The listed file becomes a link to a log outside the directory: nothing of it is read.
    rmSync(join(logs, key));
    symlinkSync(join(outside, 'real.log'), join(logs, key));
    const linked = parser.parse({ ...task, index: 1 });
    expect(linked).toEqual({ index: 1, records: 0, counts: [], rejects: null, unreadable: expect.stringMatching(/ELOOP/) });
    parser.flush();
    expect(parts).toHaveLength(1);
  });

  it('does not read a key with a folder through that folder made a link', () => {
    const { parser, logs, outside, body } = setUp();
    const key = `sub/${DAY}-10-00-00-NESTED`;
    writeFileSync(join(outside, `${DAY}-10-00-00-NESTED`), body);
    symlinkSync(outside, join(logs, 'sub'));
    const read = parser.parse({ index: 0, key, day: DAY, file: join(logs, key), within: realpathSync(logs), size: body.length });
    expect(read).toEqual({ index: 0, records: 0, counts: [], rejects: null, unreadable: expect.stringMatching(/^its path leads out of the log directory through a link, to .*outside/) });
  });
});
