import { configError } from '../core/errors.js';
import { retryDelay } from './backoff.js';
import { isRequest, replayableBody, type BodyPlan } from './body.js';
import { RetryNetworkError, classifyFetchError } from './network-error.js';
import {
  readClock,
  resolveRetryOptions,
  type GiveUpReason,
  type NetworkOutcome,
  type ResolvedRetryOptions,
  type RetryOptions,
  type WaitReason,
} from './options.js';
import { parseRetryAfter } from './retry-after.js';
import { sleepUnlessAborted } from './sleep.js';

/** The shape of `fetch`: what {@link withRetries} wraps and returns. */
export type FetchFunction = (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;

/**
 * Methods whose repetition has the same effect as one request (RFC 9110 §9.2.2): retried without
 * an Idempotency-Key. Any other method (POST, PATCH, custom ones) needs the key.
 * TRACE and CONNECT are left out: fetch refuses them.
 *
 * @default GET, HEAD, OPTIONS, PUT, DELETE (fixed)
 * @example idempotentMethods.has('PUT') // true
 */
export const idempotentMethods: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/**
 * Wraps a fetch so that it waits as the server says and retries within bounds.
 *
 * - 429 (`rate-limited`) and 503 (`unavailable`, unless `retryUnavailable: false`) are retried after
 *   Retry-After plus jitter, or after exponential backoff with full jitter when there is none.
 * - Every other status, 4xx and 5xx alike, is returned at once.
 * - Only GET, HEAD, OPTIONS, PUT and DELETE, or a request carrying a non-empty Idempotency-Key,
 *   is ever sent twice; it is sent with the same headers (so the same key) and the same body.
 * - A network error is retried on the same terms; when the client stops, it throws a
 *   {@link RetryNetworkError} whose `outcome` is `unknown` (the server may have applied it) or
 *   `not-sent` (the connection was never made).
 * - Giving up after a 429 or 503 returns that last Response, body unread, so the caller can show
 *   it; `onGiveUp` says why. An abort rejects with the signal's reason, during a wait at once.
 *
 * Options are checked here, once: a bad one throws `SLUICE_CONFIG` naming it.
 *
 * @param fetchImpl the fetch to wrap, e.g. `fetch` or a test double. @default none (required)
 * @example
 * const api = withRetries(fetch, { maxAttempts: 3, onWait: (e) => banner(`retrying in ${Math.ceil(e.delayMs / 1000)} s`) });
 * const res = await api('/api/courses', { method: 'POST', headers: { 'Idempotency-Key': crypto.randomUUID() }, body });
 */
export function withRetries(fetchImpl: FetchFunction, options?: RetryOptions): FetchFunction {
  if (typeof fetchImpl !== 'function') throw configError('withRetries fetchImpl', 'a function', fetchImpl);
  const resolved = resolveRetryOptions(options);
  // Called as a plain function: a browser's fetch throws "Illegal invocation" on a foreign `this`.
  return (input, init) => send(fetchImpl, input, init, resolved);
}

/**
 * One retrying request with the global `fetch`; see {@link withRetries} for the contract.
 * Bad options reject with `SLUICE_CONFIG`. To reuse options, prefer `withRetries` (checked once).
 *
 * @param options @default {@link retryDefaults}
 * @example const res = await retryingFetch('/api/courses', undefined, { deadline: '20s' })
 */
export async function retryingFetch(
  input: RequestInfo | URL,
  init?: RequestInit,
  options?: RetryOptions,
): Promise<Response> {
  // Looked up per call, so a polyfill or a test's stub installed later is used.
  return withRetries((i, n) => globalThis.fetch(i, n), options)(input, init);
}

/** What the wrapper knows about the request before the first attempt. */
interface Prepared {
  signal: AbortSignal | undefined;
  retryable: boolean;
  plan: BodyPlan;
  init: RequestInit | undefined;
}

async function prepare(
  input: RequestInfo | URL,
  init: RequestInit | undefined,
  o: ResolvedRetryOptions,
): Promise<Prepared> {
  const fromRequest = isRequest(input) ? input : undefined;
  const signal = init?.signal ?? fromRequest?.signal ?? undefined;
  // fetch takes init.headers instead of (not merged with) a Request's headers, and so do we.
  const headers = new Headers(init?.headers ?? fromRequest?.headers);
  const method = (init?.method ?? fromRequest?.method ?? 'GET').toUpperCase();
  const key = headers.get(o.idempotencyKeyHeader)?.trim() ?? '';
  const retryable = idempotentMethods.has(method) || key !== '';
  // A request that is never sent twice goes out exactly as given: nothing is buffered or copied.
  if (!retryable) return { signal, retryable, plan: { kind: 'none' }, init };
  const plan = await replayableBody(input, init, o.maxBodyBytes);
  // The headers are a snapshot too, so a caller who edits its Headers during a wait changes nothing.
  const same: RequestInit = { ...init, headers };
  if (plan.kind === 'replayable') same.body = plan.body;
  // A stream body needs `duplex: 'half'` (fetch standard); not yet in TypeScript's RequestInit.
  if (plan.kind === 'too-large') Object.assign(same, { body: plan.body, duplex: 'half' });
  return { signal, retryable, plan, init: same };
}

async function send(
  fetchImpl: FetchFunction,
  input: RequestInfo | URL,
  init: RequestInit | undefined,
  o: ResolvedRetryOptions,
): Promise<Response> {
  const deadlineAt = readClock(o.now) + o.deadlineMs;
  const { signal, retryable, plan, init: attemptInit } = await prepare(input, init, o);

  for (let attempt = 1; ; attempt++) {
    let response: Response | undefined;
    let outcome: NetworkOutcome | undefined;
    let failure: unknown;
    try {
      response = await fetchImpl(input, attemptInit);
    } catch (error) {
      if (signal?.aborted) throw aborted(o, attempt, error);
      const kind = classifyFetchError(error);
      if (kind === 'program') throw error;
      outcome = kind;
      failure = error;
    }
    const status = response?.status;
    if (response !== undefined && !(status === 429 || (status === 503 && o.retryUnavailable)))
      return response;

    const reason: WaitReason = status === 429 ? 'rate-limited' : status === 503 ? 'unavailable' : 'network';
    const retryAfter = parseRetryAfter(response?.headers.get('Retry-After'), readClock(o.now));
    const retryAfterMs = retryAfter !== undefined && retryAfter > 0 ? retryAfter : undefined;

    let stop: GiveUpReason | undefined;
    let delayMs = 0;
    if (!retryable) stop = 'not-idempotent';
    else if (plan.kind === 'too-large') stop = 'body-too-large';
    else if (attempt >= o.maxAttempts) stop = 'max-attempts';
    else if (retryAfterMs !== undefined && retryAfterMs > o.maxDelayMs) stop = 'retry-after-too-long';
    else {
      delayMs = retryDelay(attempt, retryAfterMs, o);
      if (readClock(o.now) + delayMs > deadlineAt) stop = 'deadline';
    }

    if (stop !== undefined) {
      o.onGiveUp?.({ reason: stop, attempt, status, retryAfterMs, outcome });
      if (response !== undefined) return response;
      throw new RetryNetworkError(outcome ?? 'unknown', attempt, failure);
    }

    // An unread body holds its connection open (undici) until it is garbage-collected.
    await discard(response);
    o.onWait?.({ attempt, delayMs, reason, status, retryAfterMs, outcome });
    try {
      await sleepUnlessAborted(o.sleep, delayMs, signal);
    } catch (error) {
      if (signal?.aborted) throw aborted(o, attempt, error);
      throw error;
    }
  }
}

function aborted(o: ResolvedRetryOptions, attempt: number, error: unknown): unknown {
  o.onGiveUp?.({
    reason: 'aborted',
    attempt,
    status: undefined,
    retryAfterMs: undefined,
    outcome: undefined,
  });
  return error;
}

async function discard(response: Response | undefined): Promise<void> {
  try {
    await response?.body?.cancel();
  } catch {
    // Already consumed or errored: either way nothing is left to release.
  }
}
