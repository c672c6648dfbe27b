/** `pingroll status` found a day in the range that is not complete: exit 5. */
export class NotCompleteError extends Error {}

/** The run finished, but log objects could not be read: exit 4. */
export class UnreadableObjectsError extends Error {}
