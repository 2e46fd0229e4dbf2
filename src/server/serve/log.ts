import { pino, type DestinationStream, type Logger as Pino } from 'pino';
import { isSluiceError } from '../../core/errors.js';
import type { Logger } from '../../limiter/failure.js';
import type { PolicyError } from '../policy/errors.js';

export type ServerLog = Pino;

/**
 * The server's JSON log: one object a line on standard output. It records the server's life
 * (start, reloads, shutdown) and its failures, never a request: no address, key, identity or
 * header value ever reaches it, and errors are logged by their class and code, whose messages
 * are sluice's own and quote no request value.
 */
export function createServerLog(destination?: DestinationStream): ServerLog {
  return pino(
    {
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    // Synchronous: the lines are few (no access log), and none is lost when the process exits.
    destination ?? pino.destination({ fd: 1, sync: true }),
  );
}

/** The limiters' logger (store failures, at most a line a minute per limit) on the server's log. */
export function limiterLogger(log: ServerLog): Logger {
  return { warn: (details, message) => log.warn({ event: 'store-failure', ...details }, message) };
}

/** An error as the log carries it: its class and code, never a message that might quote a value. */
export function errorFields(error: unknown): { error: string; code?: string } {
  const name = error instanceof Error ? error.name : typeof error;
  return isSluiceError(error) ? { error: name, code: error.code } : { error: name };
}

/** Every issue of a policy that could not be used, one line each with its place. */
export function logPolicyIssues(log: ServerLog, error: PolicyError, message: string): void {
  for (const issue of error.issues)
    log.error(
      { event: 'policy-error', file: error.file, line: issue.line, column: issue.column },
      `${message}: ${issue.message}`,
    );
}

/**
 * A failure that may repeat on every request (a store or an upstream down), reported the first
 * time at once and then at most once per `intervalMs`, with how many happened since the last
 * report, so that an outage under load does not flood the log.
 */
export function throttledReport(
  intervalMs: number,
  report: (error: unknown, failures: number) => void,
): (error: unknown) => void {
  let last = -Infinity;
  let failures = 0;
  return (error) => {
    failures++;
    const now = performance.now();
    if (now - last < intervalMs) return;
    last = now;
    report(error, failures);
    failures = 0;
  };
}
