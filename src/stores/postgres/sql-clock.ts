import type { TimeSource } from '../shared/time-source.js';

/** `timestamp` (an SQL timestamptz expression) in whole ms since the Unix epoch. */
export function epochMs(timestamp: string): string {
  return `floor(extract(epoch FROM ${timestamp}) * 1000)::bigint`;
}

/** The store's time in whole ms since the Unix epoch. */
export const storeNow = epochMs('statement_timestamp()');

/**
 * A statement's now: the store's time, or on the application's the parameter `param` (its
 * number, the one after the statement's own).
 */
export function nowOf(timeSource: TimeSource, param: number): string {
  return timeSource === 'store' ? storeNow : `$${param}::bigint`;
}

/**
 * The check every statement makes once its writes are done: true while the statement is within
 * its deadline (the time left when it was sent, parameter `param`, counted from the start of its
 * transaction), otherwise `before_deadline` raises query_canceled (57014) and the whole
 * statement, its writes included, rolls back. A take that waited on a lock past its deadline,
 * and was answered with the failure policy, is never charged when the lock is released.
 *
 * The deadline counts from `transaction_timestamp()`, not `statement_timestamp()`: the server
 * sets the statement's time again at each message of the extended protocol, and the lock a
 * statement waits for is taken while its Bind (or Parse) message runs, so the Execute message
 * after it would restart the clock once the lock is released: a take blocked for seconds
 * behind a `LOCK TABLE` would then find its whole time still ahead and be charged, long after
 * its caller was answered. The transaction's time is set by the first message and never moves
 * (in an all-or-nothing transaction it is the BEGIN's, earlier still: the deadline can only come
 * sooner).
 */
export function beforeDeadline(schema: string, param: number): string {
  return `${schema}.before_deadline(transaction_timestamp() + $${param}::float8 * interval '1 millisecond')`;
}

/** A statement's now and its deadline check: see {@link nowOf} and {@link beforeDeadline}. */
export interface StatementClock {
  readonly now: string;
  readonly onTime: string;
}

/**
 * The clock of a statement whose parameters end with the application's time (timeSource "app"
 * only) and the time left, after the statement's own: `param` is the number of the first of them.
 */
export function statementClock(schema: string, timeSource: TimeSource, param: number): StatementClock {
  return {
    now: nowOf(timeSource, param),
    onTime: beforeDeadline(schema, timeSource === 'store' ? param : param + 1),
  };
}
