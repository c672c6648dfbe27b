/** `pingroll status` found a day in the range that is neither complete nor provisional (it needs action): exit 5. */
export class NotCompleteError extends Error {}

/** `pingroll status` found every day complete or provisional, and some provisional (waiting for scheduled listings, nothing to do): exit 6. */
export class ProvisionalError extends Error {}

/** The run finished, but log objects could not be read: exit 4. */
export class UnreadableObjectsError extends Error {}
