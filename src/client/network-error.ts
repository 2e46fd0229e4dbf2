import type { NetworkOutcome } from './options.js';

/**
 * Thrown when a request ends in a network error and the client does not (or may no longer)
 * retry it. `outcome` says what the caller may assume:
 * - `unknown`: the request may have reached the server and even been applied (a connection
 *   reset after sending, a browser's "Failed to fetch"). Before sending it again, find out what
 *   happened, or send it again with the same Idempotency-Key;
 * - `not-sent`: the connection was never established, so the server never saw the request;
 *   sending it again is safe.
 *
 * The original error is `cause`. An abort is never wrapped: the caller gets the signal's reason.
 *
 * @example
 * try { await retryingFetch(url, { method: 'POST', body }) }
 * catch (e) { if (e instanceof RetryNetworkError && e.outcome === 'unknown') showCheckOrdersPage() }
 */
export class RetryNetworkError extends Error {
  /** Whether the request may have reached the server. */
  readonly outcome: NetworkOutcome;
  /** Requests made, the failed one included. */
  readonly attempts: number;

  constructor(outcome: NetworkOutcome, attempts: number, cause: unknown) {
    super(
      outcome === 'unknown'
        ? `network error after the request may have been sent (attempt ${attempts}): the outcome is unknown`
        : `network error before the request was sent (attempt ${attempts}): the server never saw it`,
      { cause },
    );
    this.name = 'RetryNetworkError';
    this.outcome = outcome;
    this.attempts = attempts;
  }
}

/**
 * Error codes (Node's undici puts them on `error.cause.code`) that can only arise before a
 * connection exists: refused, unreachable, unresolvable, or a connect timeout. Nothing else counts
 * as `not-sent`. In particular a reset (ECONNRESET, UND_ERR_SOCKET) may hit a reused keep-alive
 * connection after the request went out, and a browser's TypeError carries no detail at all:
 * both are `unknown`. Erring towards `unknown` costs a retry; erring the other way can charge a
 * card twice.
 */
const notSentCodes = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * Classifies what fetch rejected with:
 * - `program`: not a network failure (not a TypeError, or an invalid URL): rethrown as is, never retried;
 * - `not-sent` or `unknown`: a network failure, see {@link RetryNetworkError}.
 * The fetch standard rejects with a TypeError on a network error, so that is what is looked for.
 */
export function classifyFetchError(error: unknown): NetworkOutcome | 'program' {
  if (!(error instanceof TypeError)) return 'program';
  const code = causeCode(error.cause);
  if (code === 'ERR_INVALID_URL') return 'program';
  if (code !== undefined && notSentCodes.has(code)) return 'not-sent';
  // Happy-eyeballs connects (Node 20+) fail with an AggregateError of one error per address.
  const errors = (error.cause as { errors?: unknown } | undefined)?.errors;
  if (Array.isArray(errors) && errors.length > 0 && errors.every((e) => notSentCodes.has(causeCode(e) ?? '')))
    return 'not-sent';
  return 'unknown';
}

function causeCode(cause: unknown): string | undefined {
  const code = (cause as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}
