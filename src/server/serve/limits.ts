/** The largest body the API reads: 1 MiB. A larger one is a 413 before it is parsed. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** The most items one batch may hold. */
export const MAX_ITEMS = 1000;
