/**
 * What a guard decides before any limit: a client on the deny list is answered 403, one on the
 * allow list and a request `skip` lets through go on untouched, each reported to the guard's own
 * events; every other request goes on to be limited.
 */
import { SluiceError } from '../core/errors.js';
import type { DecisionEvent, DecisionOutcome } from '../limiter/events.js';
import type { GuardSettings } from './guard-options.js';
import { untouched, type GuardOutcome, type GuardOutcomes } from './guard-outcome.js';
import { isThenable } from './maybe-sync.js';
import type { RequestFacts } from './request-facts.js';

/** What comes after admission, and what admission itself answers: an outcome now or later. */
type Decide<Request> = (request: Request, facts: RequestFacts) => GuardOutcome | Promise<GuardOutcome>;

/** An outcome of the guard itself: decided before any rule, so nothing else is known. */
function guardEvent(outcome: DecisionOutcome): DecisionEvent {
  return Object.freeze({
    rule: undefined,
    outcome,
    store: undefined,
    cost: 0,
    remaining: 0,
    retryAfterMs: 0,
    storeLatencyMs: 0,
    keyHash: undefined,
  });
}
// The same three values every time: reporting them allocates nothing.
const deniedEvent = guardEvent('denied');
const allowedEvent = guardEvent('allowed-by-list');
const skippedEvent = guardEvent('skipped');

/**
 * The guard's admission: the lists (deny first), then `skip`, then `limit` for the requests that
 * neither answered. It returns at once unless `skip` (or `limit`) answers with a promise.
 *
 * @example
 * const decide = guardAdmission(settings, outcomes, report, limit);
 * const outcome = decide(request, facts);
 */
export function guardAdmission<Request>(
  settings: GuardSettings,
  outcomes: GuardOutcomes,
  report: (error: unknown) => void,
  limit: Decide<Request>,
): Decide<Request> {
  const { deny, allow, skip, events } = settings;
  const address = settings.address as ((request: Request) => unknown) | undefined;
  const denied = outcomes.denied;

  const emit = (event: DecisionEvent): void => {
    if (events !== undefined && events.listening) events.emit(event);
  };

  /** A skip that throws or rejects is no skip: the request is limited, and the error reported. */
  const skipFailed = (
    request: Request,
    facts: RequestFacts,
    error: unknown,
  ): GuardOutcome | Promise<GuardOutcome> => {
    report(error);
    return limit(request, facts);
  };

  const skipped = (): GuardOutcome => {
    emit(skippedEvent);
    return untouched;
  };

  return (request, facts) => {
    if (address !== undefined && (deny !== undefined || allow !== undefined)) {
      let client: unknown;
      try {
        client = address(request);
        if (typeof client === 'object' && client !== null) {
          throw new SluiceError(
            'SLUICE_CONFIG',
            'rateLimit address must return the address as text (it returned an object, maybe a promise)',
          );
        }
      } catch (error) {
        return outcomes.failed(error, undefined, []);
      }
      // Deny first: an address on both lists is denied.
      if (deny !== undefined && deny.has(client as string | undefined)) {
        emit(deniedEvent);
        return denied;
      }
      if (allow !== undefined && allow.has(client as string | undefined)) {
        emit(allowedEvent);
        return untouched;
      }
    }
    if (skip !== undefined) {
      let answer: unknown;
      try {
        answer = (skip as (request: Request) => unknown)(request);
      } catch (error) {
        return skipFailed(request, facts, error);
      }
      if (isThenable(answer)) {
        // Adopted into a native promise: adapters tell a waiting outcome by `instanceof Promise`.
        return Promise.resolve(answer).then(
          (value) => (value === true ? skipped() : limit(request, facts)),
          (error: unknown) => skipFailed(request, facts, error),
        );
      }
      if (answer === true) return skipped();
    }
    return limit(request, facts);
  };
}
