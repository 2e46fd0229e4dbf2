/**
 * The guard: a route limit, framework-free, composed of its steps in the order a request meets
 * them: admission (the lists and skip, guard-admission.ts), the filter (methods, exclude,
 * preflight, guard-filter.ts), the key step, the charge (guard-charge.ts), the outcome
 * (guard-outcome.ts) and, after the response, the finishing (guard-finishing.ts).
 */
import { GuardCharge } from './guard-charge.js';
import { guardAdmission } from './guard-admission.js';
import { guardFilter } from './guard-filter.js';
import { readGuardOptions } from './guard-options.js';
import {
  GuardOutcomes,
  untouched,
  untouchedPromise,
  type GuardOutcome,
  type RequestRateLimit,
} from './guard-outcome.js';
import { guardFinishing } from './guard-finishing.js';
import { errorReporter } from './failure-reports.js';
import { isThenable } from './maybe-sync.js';
import type { RateLimitOptions } from './rate-limit-options.js';
import type { RequestFacts } from './request-facts.js';

export type { CountOnly, ErrorReportDetails } from './guard-options.js';
export type { KeyResult, KeySpec } from './guard-keys.js';
export type { GuardOutcome, RequestRateLimit } from './guard-outcome.js';
export { needsFinishing, needsSettling } from './guard-finishing.js';
export type { RateLimitOptions } from './rate-limit-options.js';
export { isPreflight, type RequestFacts } from './request-facts.js';

/**
 * A route limit, framework-free: adapters call `check` and copy the outcome. Made by
 * {@link createGuard}.
 *
 * @example
 * const outcome = await guard.check(ctx, { method: ctx.method, path: ctx.path });
 */
export interface Guard<Request> {
  /**
   * Decides for a request; never rejects (a failure becomes a problem response). `request` must
   * be the framework's object of this one request: a bucket is charged once per request object.
   */
  check(request: Request, facts: RequestFacts): Promise<GuardOutcome>;
  /**
   * The same decision as {@link Guard.check}, returned as it is when nothing had to be waited
   * for (limits on a synchronous store such as memory, a key function and a `skip` that return
   * plain values, no delay mode), otherwise as a native `Promise` (whatever thenable the key or
   * `skip` returned) that never rejects. An adapter on a hot path uses it to spare every request
   * a promise and a turn of the event loop's microtask queue.
   */
  decide(request: Request, facts: RequestFacts): GuardOutcome | Promise<GuardOutcome>;
  /**
   * Reports an error that happened while an adapter wrote the outcome, through `onError` (at most
   * once a minute, like the guard's own). Never throws.
   */
  report(error: unknown): void;
  /**
   * Finishes an admitted request once its response is ended or its connection closed: releases
   * its lease, and under `countOnly` refunds the charges of a request that does not count.
   * `status` is the response's status, or undefined when the connection closed before the
   * response was ended. Adapters call it once per outcome that {@link needsFinishing}; it does
   * nothing for another. Never throws: a refund or release that fails is reported through
   * `onError`; a receipt the application settled itself is left alone.
   */
  finish(outcome: RequestRateLimit, status: number | undefined): void;
  /** @deprecated use {@link Guard.finish}, the same method under its new name */
  settle(outcome: RequestRateLimit, status: number | undefined): void;
  /**
   * True for a guard in delay mode: its `check` may wait, and reads `facts.signal` to learn that
   * the client went away (an adapter makes one only then).
   */
  readonly delays: boolean;
}

/**
 * Builds a framework-free route limit. Adapters (`sluice/node`, `sluice/express`,
 * `sluice/fastify`, `sluice/hono`) wrap it; use it directly for another framework. Its `check`
 * never rejects: whatever fails between the key step and the response becomes a problem response.
 *
 * @default see {@link RateLimitOptions} for each option's default
 * @example
 * const guard = createGuard({ limits: general, key: (req) => sessionUserKey(req), methods: ['POST', 'PUT', 'PATCH', 'DELETE'] });
 * const outcome = await guard.check(req, { method: req.method, path: url.pathname });
 */
export function createGuard<Request>(options: RateLimitOptions<Request>): Guard<Request> {
  const settings = readGuardOptions(options);
  const key = options.key;
  const report = errorReporter(settings.clock, settings.onError);
  const outcomes = new GuardOutcomes(settings, report);
  const { refund, finish } = guardFinishing(settings, report);
  const charge = new GuardCharge<Request>(settings, outcomes, refund);
  const applies = guardFilter(settings);

  /** The request after the lists and skip: methods, exclude and preflight, then the key. */
  const limit = (request: Request, facts: RequestFacts): GuardOutcome | Promise<GuardOutcome> => {
    try {
      if (!applies(facts)) return untouched;
      return charge.decide(request, key(request), facts);
    } catch (error) {
      return outcomes.failed(error, undefined, []);
    }
  };
  const decide = guardAdmission(settings, outcomes, report, limit);

  return {
    check(request, facts) {
      const outcome = decide(request, facts);
      if (isThenable(outcome)) return outcome;
      // The outcomes that are always the same have their promise made once.
      if (outcome === untouched) return untouchedPromise;
      return outcome === outcomes.denied ? outcomes.deniedPromise : Promise.resolve(outcome);
    },
    decide,
    report,
    finish,
    settle: finish,
    delays: settings.maxWait !== undefined,
  };
}
