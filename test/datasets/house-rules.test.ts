/**
 * Rules of the code's structure that a change could break without any other test noticing:
 * - the output's own folders are spelled in one module (datasets/layout.ts), which deploy/ reads too;
 * - the rollup engine's interface (rollup/engine.ts) imports nothing of an engine, and the Redshift
 *   engine nothing of DuckDB (every figure of a Redshift run is Redshift's);
 * - no function of the jobs (jobs/) takes more than four arguments: what a stage works with is one
 *   `Stage` (jobs/stages/stage.ts), what a day's status is read from one `StateSnapshot`;
 * - the state (state/) imports nothing of the ingest: the lister's naming of the logs
 *   (ingest/listing/) reaches the ledger as `ListerRules`, and no seal or listing state is written from state/;
 * - the backends, followed from the daily job through every call that passes them on, cross between
 *   top-level folders at most 15 times, never into a folder above (issue #55): each piece of state is
 *   handed the store once (state/run-state.ts, the publisher, the lister) and offers whole operations.
 */
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { traceBackends } from '../support/backends-trace.js';

const tracked = (...globs: string[]): string[] => execFileSync('git', ['ls-files', ...globs], { encoding: 'utf8' }).split('\n').filter(Boolean);
/** The product's source: not its tests, benchmarks or tools. */
const source = tracked('*.ts').filter((f) => !/(^|\/)test\//.test(f) && !/^(bench|tools)\//.test(f) && !f.endsWith('.d.ts') && !f.endsWith('.as.ts'));

describe('the house rules', () => {
  it('spells the output\'s own folders in datasets/layout.ts alone, and deploy/ takes them from there', () => {
    expect(source.length).toBeGreaterThan(100);
    const spelling = source.filter((f) => f !== 'datasets/layout.ts' && /_state\/|_staging\/|_runs\/|_warehouse-rollup\//.test(readFileSync(f, 'utf8')));
    expect(spelling).toEqual([]);
    expect(readFileSync('deploy/lib/pingroll-stack.ts', 'utf8')).toMatch(/from '\.\.\/\.\.\/datasets\/layout\.js'/);
  });

  it('keeps the engine interface free of any engine, and the Redshift engine free of DuckDB', () => {
    const imports = (f: string): string[] => [...readFileSync(f, 'utf8').matchAll(/^import [^;]*? from '([^']+)'/gm)].map((m) => m[1]!);
    expect(imports('rollup/engine.ts').filter((i) => i.includes('engines/'))).toEqual([]);
    const redshift = source.filter((f) => f.startsWith('rollup/engines/redshift/'));
    expect(redshift.length).toBeGreaterThan(3);
    for (const f of redshift) expect(imports(f).filter((i) => /duckdb/i.test(i) && !i.endsWith('lib/duckdb-engine.js')), f).toEqual([]);
    // (lib/duckdb-engine.ts lends the SQL quoting helpers, sqlString and idKey: no connection.)
    for (const f of redshift) expect(readFileSync(f, 'utf8'), f).not.toMatch(/DuckDBConnection|queryRows|openEngine/);
  });

  it('keeps the state free of the ingest: the lister is one module above it', () => {
    const climbing = source.filter((f) => f.startsWith('state/')).flatMap((f) =>
      [...readFileSync(f, 'utf8').matchAll(/^import [^;]*? from '([^']+)'/gm)].map((m) => m[1]!).filter((i) => /(^|\/)ingest\//.test(i)).map((i) => `${f}: ${i}`));
    expect(climbing).toEqual([]);
    expect(source.filter((f) => f.startsWith('ingest/listing/')).length).toBeGreaterThanOrEqual(7);
  });

  it('gives no function of the jobs more than four arguments', () => {
    const wide: string[] = [];
    for (const f of source.filter((s) => s.startsWith('jobs/'))) {
      const file = ts.createSourceFile(f, readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, true);
      const visit = (n: ts.Node): void => {
        if ((ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n)) && n.parameters.length > 4) {
          wide.push(`${f}:${file.getLineAndCharacterOfPosition(n.getStart()).line + 1} (${n.parameters.length})`);
        }
        ts.forEachChild(n, visit);
      };
      visit(file);
    }
    expect(wide).toEqual([]);
  });

  it('hands the backends on from the daily job across folders at most 15 times, never up', () => {
    const { crossings, reached } = traceBackends(process.cwd(), { file: 'jobs/daily.ts', fn: 'runDailyJob' });
    const said = crossings.map((c) => `${c.climbs ? 'UP ' : ''}${c.from} -> ${c.to} [${c.passed.join(', ')}] at ${c.at}`);
    // The trace goes the whole way: the run, its stages, the ingest, retention.
    for (const f of ['jobs/run.ts:withRun', 'jobs/stages/ingest.ts:ingest', 'jobs/stages/rollup.ts:rollupDay', 'jobs/stages/close.ts:closeMonth', 'jobs/daily.ts:retain']) expect(reached).toContain(f);
    expect(said.filter((c) => c.startsWith('jobs/run.ts:withRun -> state/run-state.ts:RunState.load [Backends.store]'))).toHaveLength(1);
    expect(crossings.filter((c) => c.climbs), said.join('\n')).toEqual([]);
    expect(crossings.length, said.join('\n')).toBeLessThanOrEqual(15);
  }, 60_000);
});
