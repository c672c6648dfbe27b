// An analyst's session: opens a DuckDB warehouse read-only and keeps it open, answering one query
// per line on stdin ("again": the same connection; "reopen": a fresh one), one JSON line each.
import { createInterface } from 'node:readline';
import { createRequire } from 'node:module';

const { DuckDBInstance } = createRequire(import.meta.url)('@duckdb/node-api');
const [file, sql] = process.argv.slice(2);
let instance = await DuckDBInstance.create(file, { access_mode: 'READ_ONLY' });
let db = await instance.connect();
const answer = async () => {
  const rows = (await db.runAndReadAll(sql)).getRowObjectsJson();
  process.stdout.write(JSON.stringify(rows) + '\n');
};
await answer();
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'reopen') {
    db.closeSync();
    instance.closeSync();
    instance = await DuckDBInstance.create(file, { access_mode: 'READ_ONLY' });
    db = await instance.connect();
  }
  await answer();
}
