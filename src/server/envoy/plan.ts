import { MAX_COUNT } from '../../core/bounds.js';
import { SluiceError } from '../../core/errors.js';
import type { EnvoyDomains, EnvoyRule } from './config.js';
import { findRule, overrideCounter } from './match.js';
import type { DescriptorMessage, RequestMessage } from './messages.js';
import { OVERRIDE_UNITS, type EnvoyUnit } from './units.js';

/** What one descriptor of a request asks for, before any bucket is asked. */
export type Plan =
  | { readonly kind: 'none' }
  | { readonly kind: 'unlimited'; readonly rule: EnvoyRule }
  | {
      readonly kind: 'limit';
      readonly rule: EnvoyRule;
      /** The text of its counter (a bucket key once keyed). */
      readonly counter: string;
      /** Units to charge; 0 checks without charging. */
      readonly cost: number;
      /**
       * A debit: units the descriptor names itself (its own hits_addend), as Envoy sends for
       * accounting after a response. Always charged, even past the limit.
       */
      readonly debit: boolean;
      /** Values of the request went into upstream's metric key: counted in the top-K summary. */
      readonly detailed: boolean;
    };

/**
 * Bounds of a request, far above what Envoy sends (a route's few rate_limits, a few actions
 * each), so that one call cannot make the server compare or store without end.
 */
const MAX_DESCRIPTORS = 256;
const MAX_ENTRIES = 64;

/** Thrown for a request Envoy's API does not allow: gRPC INVALID_ARGUMENT, /json 400. */
export function invalid(message: string): SluiceError {
  return new SluiceError('SLUICE_ARGUMENT', message, { status: 400 });
}

/**
 * Checks a request and finds each descriptor's limit as envoyproxy/ratelimit does: an override
 * wins (in a configured domain, matched or not), else the configuration's rule; `replaces` drops
 * every other matched rule of a name a matched rule lists (per request, not transitively).
 */
export function planRequest(domains: EnvoyDomains, request: RequestMessage): Plan[] {
  if (request.domain === '') throw invalid('rate limit domain must not be empty');
  if (request.descriptors.length === 0) throw invalid('rate limit descriptor list must not be empty');
  if (request.descriptors.length > MAX_DESCRIPTORS)
    throw invalid(`a request may hold at most ${MAX_DESCRIPTORS} descriptors`);
  for (const d of request.descriptors)
    if (d.entries.length > MAX_ENTRIES) throw invalid(`a descriptor may hold at most ${MAX_ENTRIES} entries`);
  const hits = request.hits_addend > 0 ? request.hits_addend : 1;
  const known = domains.has(request.domain);
  const plans = request.descriptors.map((d) => planDescriptor(domains, request.domain, known, d, hits));
  const replaced = new Set<string>();
  for (const plan of plans)
    if (plan.kind !== 'none') for (const name of plan.rule.replaces) replaced.add(name);
  if (replaced.size === 0) return plans;
  return plans.map((plan) =>
    plan.kind === 'limit' && plan.rule.name !== '' && replaced.has(plan.rule.name) ? { kind: 'none' } : plan,
  );
}

function planDescriptor(
  domains: EnvoyDomains,
  domain: string,
  known: boolean,
  descriptor: DescriptorMessage,
  hits: number,
): Plan {
  const entries = descriptor.entries;
  if (!known) return { kind: 'none' };
  const cost = costOf(descriptor, hits);
  const debit = descriptor.hits_addend !== null && cost > 0;
  if (descriptor.limit !== null) {
    const unit = descriptor.limit.unit;
    if (!OVERRIDE_UNITS.has(unit))
      throw invalid(
        "a descriptor's limit override must have a unit: SECOND, MINUTE, HOUR, DAY, MONTH or YEAR",
      );
    const rule = overrideRule(domain, unit as EnvoyUnit, descriptor.limit.requests_per_unit);
    return { kind: 'limit', rule, counter: overrideCounter(domain, entries), cost, debit, detailed: false };
  }
  const match = findRule(domains, domain, entries);
  if (match === undefined) return { kind: 'none' };
  if (match.rule.unlimited) return { kind: 'unlimited', rule: match.rule };
  return { kind: 'limit', rule: match.rule, counter: match.counter, cost, debit, detailed: match.detailed };
}

/** A descriptor's own hits_addend (0 included), else the request's (0 meaning 1). */
function costOf(descriptor: DescriptorMessage, hits: number): number {
  if (descriptor.hits_addend === null) return hits;
  const value = Number(descriptor.hits_addend.value);
  if (!Number.isSafeInteger(value) || value < 0 || value > MAX_COUNT)
    throw invalid("a descriptor's hits_addend must be a whole number from 0 to 10^12");
  return value;
}

/** The rule an override stands for: counted as `override` in metrics, never by its values. */
function overrideRule(domain: string, unit: EnvoyUnit, requestsPerUnit: number): EnvoyRule {
  return {
    path: `${domain}.override`,
    name: '',
    unit,
    requestsPerUnit,
    unlimited: false,
    shadow: false,
    quota: false,
    detailed: false,
    replaces: [],
    metadata: undefined,
    burst: undefined,
  };
}
