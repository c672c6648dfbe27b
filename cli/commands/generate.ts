import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { generateSample, sampleEpisodeCatalog, writeSample } from '../../tools/sample/access-log-generator.js';
import { ConfigError, parseDay } from '../../infra/config.js';
import { DAY_MS } from '../../lib/utc-day.js';

export interface GenerateOptions { out: string; date?: string; sessions: string; seed: string; prefix: string; catalog?: string; resends?: string }

/** `pingroll generate`: a seeded sample of access logs under a directory. */
export async function generateCommand(values: GenerateOptions): Promise<void> {
  const date = parseDay(values.date ?? new Date(Date.now() - DAY_MS).toISOString().slice(0, 10), '--date');
  const sessions = Number(values.sessions);
  if (!Number.isInteger(sessions) || sessions <= 0) throw new ConfigError(`--sessions=${values.sessions} must be a positive whole number`);
  const seed = Number(values.seed);
  if (!Number.isInteger(seed)) throw new ConfigError(`--seed=${values.seed} must be a whole number`);
  const resends = values.resends === undefined ? 0 : Number(values.resends);
  if (!(resends >= 0 && resends <= 1)) throw new ConfigError(`--resends=${values.resends} must be a share from 0 to 1`);
  const started = Date.now();
  const sample = generateSample({ date, sessions, seed, prefix: values.prefix, resends });
  await writeSample(sample, values.out);
  // The episode catalog the sample's episodes come from (PINGROLL_EPISODE_CATALOG): completion figures for the demo.
  if (values.catalog) {
    await mkdir(dirname(values.catalog), { recursive: true });
    await writeFile(values.catalog, sampleEpisodeCatalog());
  }
  process.stderr.write(`generated ${sample.records} records in ${sample.objects.length} objects (${(sample.bytes / 1e6).toFixed(1)} MB) for ${date} under ${values.out} in ${Date.now() - started} ms\n`);
}
