/**
 * A header and rows as CSV (RFC 4180: a field is quoted when it holds a comma, quote or line break; CRLF
 * line ends). A text that a spreadsheet would take for a formula (it starts with =, +, -, @, a tab or a
 * carriage return: series and episode ids are whatever a player sent) is written with a ' before it,
 * so that it stays text (OWASP, CSV injection); numbers are written as they are.
 */
export function csvText(header: readonly string[], rows: Array<Array<string | number | null>>): string {
  const text = (v: string | number): string => (typeof v === 'string' && /^[=+\-@\t\r]/.test(v) ? `'${v}` : String(v));
  const field = (v: string | number | null): string => (v === null ? '' : /[",\r\n]/.test(text(v)) ? `"${text(v).replace(/"/g, '""')}"` : text(v));
  return [header.join(','), ...rows.map((r) => r.map(field).join(','))].join('\r\n') + '\r\n';
}
