/** The largest body the API reads: 1 MiB. A larger one is a 413 before it is parsed. */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * How much of a body over {@link MAX_BODY_BYTES} is read and dropped before the 413 is sent, so
 * that a client still sending it reads the answer: a server that answers and closes while the
 * client writes makes the client's system reset the connection, and the client sees a failed
 * request instead of a 413. A body declared or grown larger than this is answered at once and
 * its connection closed.
 */
export const MAX_DRAINED_BYTES = 8 * 1024 * 1024;

/** The most items one batch may hold. */
export const MAX_ITEMS = 1000;
