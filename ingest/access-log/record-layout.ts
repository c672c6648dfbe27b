/**
 * The shape of an S3 server access-log record (contract §2, §7): field names in AWS's documented order,
 * and why a line may not be a record. Shared by the scanner (WebAssembly), its TypeScript reference
 * and everything that reads scanned records.
 */

export const FIELD_NAMES = [
  'bucket_owner', 'bucket', 'time', 'remote_ip', 'requester', 'request_id', 'operation', 'key',
  'request_uri', 'http_status', 'error_code', 'bytes_sent', 'object_size', 'total_time',
  'turn_around_time', 'referer', 'user_agent', 'version_id', 'host_id', 'signature_version',
  'cipher_suite', 'authentication_type', 'host_header', 'tls_version', 'access_point_arn',
  'acl_required', 'source_region',
] as const;
export type FieldName = (typeof FIELD_NAMES)[number];

/** Field positions in AWS's documented order. */
export const F = {
  bucketOwner: 0, bucket: 1, time: 2, remoteIp: 3, requester: 4, requestId: 5, operation: 6, key: 7,
  requestUri: 8, httpStatus: 9, errorCode: 10, bytesSent: 11, objectSize: 12, totalTime: 13,
  turnAroundTime: 14, referer: 15, userAgent: 16, versionId: 17,
} as const;

/** Fields every record has: up to and including the user agent (the oldest logs stop there or one later). */
export const MIN_FIELDS = 17;
export const KNOWN_FIELDS = FIELD_NAMES.length;

/** Why a line is not a record. Index 0 is success. */
export const SCAN_ERRORS = [
  'ok',
  'truncated: fewer than 17 fields',
  'time is not [dd/Mon/yyyy:HH:MM:SS +hhmm]',
  'request-URI is neither quoted nor -',
  'no field shape after the request-URI fits (status, error code, four numbers)',
  'referer is neither quoted nor -',
  'user agent is neither quoted nor -',
  'unterminated quoted field',
  'too ambiguous: no reading of its quotes fits within the attempt limit',
] as const;
export type ScanError = (typeof SCAN_ERRORS)[number];
