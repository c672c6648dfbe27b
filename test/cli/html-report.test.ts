/**
 * The HTML report as a person sees it: rendered by a real headless Chromium (Debian's `chromium`),
 * whose DOM must hold every chart drawn, and whose screenshot must show them. Skipped, with a message,
 * where no Chromium is installed (`apt-get install chromium`).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { reportCommand } from '../../cli/commands/report.js';
import { memoryLog } from '../../lib/log.js';
import { generateSample, sampleEpisodeCatalog, sampleEpisodes } from '../../tools/sample/access-log-generator.js';
import { catalogDurations, expectedCompletion } from '../support/oracle.js';
import { dirConfig, runDay, tempRoots, writeObjects } from '../support/job-fixture.js';

const root = tempRoots();
const chromium = ['chromium', 'chromium-browser', 'google-chrome'].find((c) => spawnSync('which', [c]).status === 0) ?? null;
if (!chromium) process.stderr.write('html-report.test: no Chromium on this machine (apt-get install chromium): the rendering test is skipped\n');

/** Headless Chromium with no network, no first-run work, its own profile. */
function headless(profile: string, ...args: string[]): string {
  return execFileSync(chromium!, ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', `--user-data-dir=${profile}`, '--window-size=1280,1500', '--virtual-time-budget=5000', ...args],
  { encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'ignore'] });
}

describe('the HTML report', () => {
  it('is one self-contained file: the data and the chart library inlined, nothing fetched', async () => {
    const r = root();
    const sample = generateSample({ date: '2026-11-01', sessions: 60, seed: 21, truth: true });
    await writeObjects(join(r, 'logs'), sample.objects);
    // Without a catalog, no completion chart.
    await runDay(dirConfig(r), { day: '2026-11-01', log: memoryLog() });
    expect(await reportCommand(dirConfig(r), { date: '2026-11-01', html: join(r, 'day.html') })).toMatch(/ 7 charts; /);
    await writeFile(join(r, 'episodes.csv'), sampleEpisodeCatalog());
    const config = dirConfig(r, { PINGROLL_EPISODE_CATALOG: join(r, 'episodes.csv') });
    await runDay(config, { day: '2026-11-01', log: memoryLog() });
    expect(await reportCommand(config, { date: '2026-11-01', html: join(r, 'day.html') })).toMatch(/^wrote .*day\.html \(\d+ KiB, 8 charts; self-contained/);
    const html = await readFile(join(r, 'day.html'), 'utf8');
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=|<img[^>]+src=/);
    expect(html).toContain('Minutes watched by hour (UTC)');
    // The concurrency curve: the series with the day's highest peak, every minute of the day, its peak among them.
    const charts = JSON.parse(/<script type="application\/json" id="pingroll-data">(.*?)<\/script>/s.exec(html)![1]!) as Array<{ id: string; labels: string[]; values: number[] }>;
    const curve = charts.find((c) => c.id === 'concurrency')!;
    expect(curve.labels).toHaveLength(1440);
    const peak = /peak concurrency<b>(\d+) sessions at (\d\d:\d\d)/.exec(html)!;
    expect(Math.max(...curve.values)).toBe(Number(peak[1]));
    expect(curve.values[curve.labels.indexOf(peak[2]!)]).toBe(Number(peak[1]));
    // Minutes by platform: each session on one platform here, so they add up to the day's minutes.
    const sum = (id: string): number => charts.find((c) => c.id === id)!.values.reduce((a, b) => a + b, 0);
    expect(charts.find((c) => c.id === 'platforms')!.labels).toContain('unknown');
    expect(sum('platforms')).toBe(sum('by-hour'));
    // Drop-off: the share of sessions with a playhead (in episodes the catalog has) reaching each point,
    // from the oracle's completion of the generator's own account of every record.
    const want = expectedCompletion(sample.truth, '2026-11-01', catalogDurations(sampleEpisodes()));
    const total = (k: 'sessions_with_position' | 'reached_25' | 'reached_50' | 'reached_75' | 'reached_95'): number => want.reduce((n, w) => n + (w[k] ?? 0), 0);
    const dropOff = charts.find((c) => c.id === 'completion')!;
    expect(dropOff.labels).toEqual(['25%', '50%', '75%', '95%']);
    expect(dropOff.values).toEqual((['reached_25', 'reached_50', 'reached_75', 'reached_95'] as const).map((k) => Math.round((total(k) / total('sessions_with_position')) * 1000) / 10));
    expect(dropOff.values[0]).toBeGreaterThan(dropOff.values[3]!);
  });

  it.skipIf(!chromium)('renders every chart in headless Chromium, day and month', async () => {
    const r = root();
    for (const d of ['2026-10-30', '2026-10-31']) await writeObjects(join(r, 'logs'), generateSample({ date: d, sessions: 60, seed: 22, prefix: `${d}/` }).objects);
    await writeFile(join(r, 'episodes.csv'), sampleEpisodeCatalog());
    const config = dirConfig(r, { PINGROLL_EPISODE_CATALOG: join(r, 'episodes.csv') });
    for (const d of ['2026-10-30', '2026-10-31']) await runDay(config, { day: d, log: memoryLog() });
    for (const [opts, charts] of [[{ date: '2026-10-31' }, 8], [{ month: '2026-10' }, 8]] as const) {
      const file = join(r, `${Object.values(opts)[0]}.html`);
      await reportCommand(config, { ...opts, html: file });
      const dom = headless(join(r, `profile-${charts}`), '--dump-dom', `file://${file}`);
      // The page's script marks each canvas it drew on, and counts them on the body.
      expect(dom).toContain(`data-charts="${charts}"`);
      expect(dom.match(/<canvas[^>]*data-drawn="true"/g)).toHaveLength(charts);
      // The month's statement beside its charts: its header, its rows and their total.
      if ('month' in opts) expect(dom).toMatch(/<div class="beside">\s*<section id="statement"><h2>Minutes watched, 2026-10 \(UTC\): open, figures so far<\/h2><dl><dt>month<\/dt><dd>2026-10<\/dd>.*<tfoot><tr><td>total \(\d+ series\)<\/td>/s);
      const png = join(r, `${charts}.png`);
      headless(join(r, `shot-${charts}`), `--screenshot=${png}`, `file://${file}`);
      // A page of charts, not a blank one (a blank 1280x1500 PNG is a few KiB).
      expect((await stat(png)).size).toBeGreaterThan(40_000);
    }
  });
});
