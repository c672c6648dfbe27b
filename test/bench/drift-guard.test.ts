/**
 * The drift guard's rule (bench/drift-guard.ts): the figures docs/benchmarks.md records, and a speed
 * ratio more than 10% below its figure fails, as does a run with nothing to do more than 10% above
 * its own, each said in one line. (The guard itself runs in make bench:
 * timing belongs there, not in a test.)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { drifted, recordedFigures } from '../../bench/drift-guard.js';

describe('the drift guard', () => {
  it('reads the figures docs/benchmarks.md records, and refuses a page without them', () => {
    const recorded = recordedFigures(readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'benchmarks.md'), 'utf8'));
    expect(recorded.commit).toMatch(/^[0-9a-f]{7,40}$/);
    expect(recorded.pinned).toBeGreaterThan(0.1);
    expect(recorded.duckdb).toBeGreaterThan(1);
    expect(recorded.noop).toBeGreaterThan(1);
    expect(() => recordedFigures('# Benchmarks\n')).toThrow(/no line <!-- drift-guard/);
  });

  it('fails a ratio more than 10% below its figure (the run with nothing to do: above), and only then', () => {
    const recorded = { commit: '45201d6', pinned: 0.9, duckdb: 2.5, noop: 3 };
    expect(drifted({ pinned: 0.82, duckdb: 2.26, noop: 3.29 }, recorded)).toEqual([]);
    const lines = drifted({ pinned: 0.8, duckdb: 2.2, noop: 3.31 }, recorded);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/0\.80x the speed of 45201d6, below the recorded 0\.90x by more than 10%/);
    expect(lines[1]).toMatch(/2\.20x the DuckDB baseline's speed, below the recorded 2\.50x/);
    expect(lines[2]).toMatch(/nothing to do takes 3\.31x `node -e 0`, above the recorded 3\.00x by more than 10%/);
  });
});
