import { SluiceError } from '../../core/errors.js';

/**
 * The error of a call that passed its deadline: `SLUICE_STORE_TIMEOUT`, saying what did not
 * answer and within how long. Every store and the limiter build their timeouts with it, so the
 * message reads the same wherever the bound was hit. `what` names a store or a limit, never a
 * key or any other request value.
 *
 * @example throw deadlineError('PostgreSQL store (PostgresStore timeout)', 100)
 */
export function deadlineError(what: string, ms: number): SluiceError {
  return new SluiceError('SLUICE_STORE_TIMEOUT', `${what} did not answer within ${ms} ms`);
}

/**
 * Bounds `pending` by `ms` milliseconds: the result settles as `pending` does when it settles
 * in time, otherwise it rejects with {@link deadlineError} once `ms` have passed. The one
 * deadline helper of sluice (the limiter and the stores use it alike).
 *
 * Behaviour, in full:
 * - a value or an error of `pending` passes through unchanged (mapping a driver's error is the
 *   caller's business, see `driverError`);
 * - an outcome of `pending` after the deadline is ignored, and its rejection counts as handled,
 *   so a late failure is never reported as an unhandled rejection;
 * - the timer keeps the process alive while it runs: a bounded call always gets an answer,
 *   even when whatever `pending` waits for holds nothing open itself.
 *
 * Node keeps timers of one duration in one list, so a call costs a list insert, not a kernel
 * timer. A store that bounds many calls at once may keep its own single timer instead, and
 * build its errors with {@link deadlineError}.
 *
 * @param ms a whole number of ms from 1 to 2^31 − 1 (checked where the option is read)
 * @param what what is waited for, as a message names it, e.g. `the redis store (limit "login")`
 * @example const rows = await withDeadline(client.query(text, values, name), 100, 'PostgreSQL store');
 */
export function withDeadline<T>(pending: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(deadlineError(what, ms)), ms);
    pending.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
