/** `pingroll status` found a day in the range that is not complete: exit 5. */
export class NotCompleteError extends Error {}
