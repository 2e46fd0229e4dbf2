/**
 * `sluice/client`: a fetch that waits as the server says. Browser-safe: it uses only fetch,
 * Headers, AbortSignal, ReadableStream, TextEncoder and setTimeout, no Node module.
 * The contract is in docs/client.md.
 *
 * @module sluice/client
 */
export { withRetries, retryingFetch, idempotentMethods, type FetchFunction } from './retry.js';
export {
  retryDefaults,
  type RetryOptions,
  type WaitEvent,
  type WaitReason,
  type GiveUpEvent,
  type GiveUpReason,
  type NetworkOutcome,
} from './options.js';
export { RetryNetworkError } from './network-error.js';
export { parseRetryAfter, parseHttpDate } from './retry-after.js';
export { abortableSleep, type Sleep } from './sleep.js';
