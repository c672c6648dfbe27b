/**
 * The regular expression AWS documents for querying S3 server access logs with Athena (RegexSerDe,
 * 27 columns, through source region). It matches, line for line, the `athena` column of
 * `test/fixtures/s3-access-logs/SOURCES.md` (the corpus's copy in this project).
 */
export const ATHENA_REGEX_SOURCE =
  '([^ ]*) ([^ ]*) \\[(.*?)\\] ([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*) ("[^"]*"|-) (-|[0-9]*) ([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*) ("[^"]*"|-) ([^ ]*)(?: ([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*))?.*$';

/** Anchored at the start too, as RegexSerDe matches a whole line. */
export const ATHENA_REGEX = new RegExp('^' + ATHENA_REGEX_SOURCE);
