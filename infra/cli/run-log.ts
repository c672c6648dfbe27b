import type { Log } from '../../lib/log.js';

/**
 * The CLI's log. Off a terminal (cron, CI): one JSON object per line on stderr, for log pipelines.
 * On a terminal: readable lines and a live progress line.
 */
export function makeLog(out: NodeJS.WriteStream = process.stderr, tty = Boolean(out.isTTY)): Log {
  let live = false, lastProgress = 0;
  const clearLive = (): void => {
    if (live) out.write('\r\x1b[K');
    live = false;
  };
  const emit = (level: string, event: string, fields: Record<string, unknown> = {}): void => {
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
