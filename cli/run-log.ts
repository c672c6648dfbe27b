import type { Log } from '../lib/log.js';
import { runFigures } from '../infra/observe/run-figures.js';

/**
 * The CLI's log. Off a terminal (cron, CI): one JSON object per line on stderr, for log pipelines.
 * On a terminal: readable lines and a live progress line. Every event is also counted into the
 * run's figures (infra/observe/run-figures.ts).
 */
export function makeLog(out: NodeJS.WriteStream = process.stderr, tty = Boolean(out.isTTY)): Log {
  let live = false, lastProgress = 0;
  const clearLive = (): void => {
    if (live) out.write('\r\x1b[K');
    live = false;
  };
  const emit = (level: string, event: string, fields: Record<string, unknown> = {}): void => {
    // The run's figures (metrics, notifications) come from its events.
    runFigures.observe(event, fields);
    if (tty) {
      clearLive();
      const rest = Object.entries(fields).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' ');
      out.write(`${level === 'warn' ? 'warning: ' : ''}${event}${rest ? ' ' + rest : ''}\n`);
    } else {
      out.write(JSON.stringify({ ts: new Date().toISOString(), level, event, ...fields }) + '\n');
    }
  };
  return {
    info: (event, fields) => emit('info', event, fields),
    warn: (event, fields) => emit('warn', event, fields),
    progress(event, text, fields) {
      if (tty) {
        out.write(`\r\x1b[K${text}`);
        live = true;
      } else if (Date.now() - lastProgress > 10_000) {
        lastProgress = Date.now();
        emit('info', event, fields);
      }
    },
  };
}
