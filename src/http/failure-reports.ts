import type { ErrorReportDetails } from './guard-options.js';

/**
 * At most one report a minute: an outage fails every request, and one log line per request would
 * bury the logs (and the disk) under copies of one message. The limiter logs store failures the
 * same way; this is the guard's counterpart for the errors it reports through `onError`.
 */
const REPORT_INTERVAL_MS = 60_000;

/**
 * Counts failures and says when one is due to be reported, with how many it stands for.
 *
 * @example
 * const failures = reports.count();
 * if (failures !== undefined) onError(error, { failures });
 */
export class FailureReports {
  private lastReportAt = -Infinity;
  private failuresSinceReport = 0;

  /** @param clock ms, e.g. the limits' own clock, so that tests drive it. */
  constructor(private readonly clock: () => number) {}

  /**
   * Counts one failure. Returns the failures since the last report (this one included) when a
   * report is due, otherwise undefined.
   */
  count(): number | undefined {
    this.failuresSinceReport++;
    const now = this.clock();
    if (now - this.lastReportAt < REPORT_INTERVAL_MS) return undefined;
    this.lastReportAt = now;
    const failures = this.failuresSinceReport;
    this.failuresSinceReport = 0;
    return failures;
  }
}

/**
 * Reports a failure through `onError` at most once a minute (by `clock`); a reporter that throws
 * is not the request's problem.
 *
 * @example
 * const report = errorReporter(settings.clock, settings.onError);
 */
export function errorReporter(
  clock: () => number,
  onError: (error: unknown, details: ErrorReportDetails) => void,
): (error: unknown) => void {
  const reports = new FailureReports(clock);
  return (error) => {
    try {
      const failures = reports.count();
      if (failures !== undefined) onError(error, { failures });
    } catch {
      // Logging must not turn one failure into another: the response is already decided.
    }
  };
}
