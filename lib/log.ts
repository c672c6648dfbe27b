/**
 * What a run says while it works: events with fields. The CLI writes them (cli/run-log.ts);
 * stages only tell.
 */
export interface Log {
  info(event: string, fields?: Record<string, unknown>): void;
  warn(event: string, fields?: Record<string, unknown>): void;
  /** A progress update: the live line on a terminal, at most one line every 10 s elsewhere. */
  progress(event: string, text: string, fields?: Record<string, unknown>): void;
}

/** A log that keeps what it is told, for tests. */
export function memoryLog(): Log & { events: Array<{ level: string; event: string; fields: Record<string, unknown> }> } {
  const events: Array<{ level: string; event: string; fields: Record<string, unknown> }> = [];
  return {
    events,
    info: (event, fields = {}) => events.push({ level: 'info', event, fields }),
    warn: (event, fields = {}) => events.push({ level: 'warn', event, fields }),
    progress: () => {},
  };
}
