/**
 * What a guard answers for a request, as values: go on with these rate-limit headers, or send
 * this response (429, 403, 400, 401, 500, 503), each with the decisions behind it.
 */
import type { Decision } from '../core/decision.js';
import type { Cascade } from '../limiter/cascade.js';
import type { Lease } from '../limiter/concurrency.js';
import type { Receipt } from '../limiter/receipts.js';
import type { GuardSettings } from './guard-options.js';
import type { HeaderValues } from './headers.js';
import {
  admittedHeaders,
  deniedResponse,
  errorResponse,
  limitedResponse,
  type HttpResponse,
} from './problem.js';

/**
 * What to do with a request: continue with these headers (set them on the response that follows),
 * or answer with this response and go no further. `decisions` are the limits' own, for logging
 * or metrics.
 *
 * @example
 * if (outcome.action === 'respond') return send(outcome.response);
 * for (const [name, value] of Object.entries(outcome.headers)) res.setHeader(name, value);
 */
export type GuardOutcome =
  | ({ readonly action: 'continue'; readonly headers: HeaderValues } & RequestRateLimit)
  | ({ readonly action: 'respond'; readonly response: HttpResponse } & RequestRateLimit);

/**
 * What the limit decided for an admitted request, as the adapters put it on the request:
 * Express `req.rateLimit`, Fastify `request.rateLimit`, Hono `c.get('rateLimit')`, node
 * `rateLimitOf(req)`. It is the guard's outcome itself, so other fields may be present.
 *
 * @example
 * const remaining = Math.min(...req.rateLimit.decisions.map((d) => d.remaining));
 */
export interface RequestRateLimit {
  /** The decisions of the limits asked, in order (none for a request the limit left alone). */
  readonly decisions: readonly Decision[];
  /**
   * With `countOnly`, what each limit charged this request, refunded or kept by the adapter once the
   * response is ended; empty otherwise, and on responses the limit sent itself. A receipt
   * holds the key: never log it.
   */
  readonly receipts: readonly Receipt[];
  /**
   * The lease of a concurrency limit ending the limits, held while the request runs: the adapter
   * releases it when the response finishes or the connection closes (through `finish`).
   */
  readonly lease?: Lease;
}

/** The receipts of every outcome that has none to finish. */
export const noReceipts: readonly Receipt[] = Object.freeze([]);

/** The outcome of a request the limit leaves alone: no headers, nothing charged. */
export const untouched: GuardOutcome = Object.freeze({
  action: 'continue',
  headers: Object.freeze({}),
  decisions: Object.freeze([]),
  receipts: noReceipts,
});

/** {@link untouched} as a promise, made once: it is the same for every request. */
export const untouchedPromise = Promise.resolve(untouched);

/**
 * The answer to a request whose client went away while it waited for a slot: nginx's 499, which
 * no client reads; nothing was charged.
 */
export const clientGone: GuardOutcome = Object.freeze({
  action: 'respond',
  response: Object.freeze({ status: 499, headers: Object.freeze({ 'Cache-Control': 'no-store' }), body: '' }),
  decisions: Object.freeze([]),
  receipts: noReceipts,
});

/**
 * The outcomes of one guard: from its limits' decisions, from a failure, and its 403, each with
 * the guard's header style, problem wording and `Cache-Control`.
 *
 * @example
 * return outcomes.concluded(decisions, extra, receipts, exposed);
 */
export class GuardOutcomes {
  /** The 403 of a client on the deny list: always the same, so made once. */
  readonly denied: GuardOutcome;
  /** {@link GuardOutcomes.denied} as a promise, made once too. */
  readonly deniedPromise: Promise<GuardOutcome>;
  /** The names of the limits in shadow mode; their decisions (all admitted) send no headers. */
  private readonly shadowNames: ReadonlySet<string>;

  constructor(
    private readonly settings: GuardSettings,
    private readonly report: (error: unknown) => void,
  ) {
    this.shadowNames = new Set(
      (settings.limiters ?? (settings.cascade as Cascade).limiters)
        .filter((l) => l.mode === 'shadow')
        .map((l) => l.name),
    );
    this.denied = {
      action: 'respond',
      response: deniedResponse(settings.cacheControl),
      decisions: [],
      receipts: noReceipts,
    };
    this.deniedPromise = Promise.resolve(this.denied);
  }

  /**
   * The outcome of a request every limit was asked about: the 429 of the first refusal, or go on
   * with the admitted headers (exposed to a page of another origin when `exposed`) and what is
   * to be finished once the response is done.
   */
  concluded(
    decisions: Decision[],
    extra: HeaderValues | undefined,
    receipts: readonly Receipt[] | undefined,
    exposed: boolean,
    lease?: Lease,
  ): GuardOutcome {
    const { headers, problem, cacheControl } = this.settings;
    for (const decision of decisions) {
      if (!decision.allowed) {
        return {
          action: 'respond',
          response: limitedResponse(this.enforcing(decisions), {
            headers,
            problem,
            extraHeaders: extra,
            cacheControl,
          }),
          decisions,
          // Nothing to finish: a refusal charged nothing, and the refused request does not go on.
          receipts: noReceipts,
        };
      }
    }
    const admitted: GuardOutcome = {
      action: 'continue',
      headers: admittedHeaders(this.enforcing(decisions), headers, extra, exposed),
      decisions,
      receipts: receipts ?? noReceipts,
    };
    return lease === undefined ? admitted : { ...admitted, lease };
  }

  /** The problem response of a failure (400, 401, 500, 503); a 500 is reported through `onError`. */
  failed(error: unknown, extra: HeaderValues | undefined, decisions: Decision[]): GuardOutcome {
    const response = errorResponse(error, extra, this.settings.cacheControl);
    if (response.status === 500) this.report(error);
    return { action: 'respond', response, decisions, receipts: noReceipts };
  }

  private enforcing(decisions: Decision[]): Decision[] {
    const shadowNames = this.shadowNames;
    return shadowNames.size === 0 ? decisions : decisions.filter((d) => !shadowNames.has(d.name));
  }
}
