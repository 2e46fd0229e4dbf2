/**
 * Which requests a guard limits: those of its `methods`, off its `exclude`d routes, and CORS
 * preflights only with `chargePreflight`. The others pass untouched and uncharged.
 */
import type { GuardSettings } from './guard-options.js';
import type { RequestFacts } from './request-facts.js';

/**
 * The guard's filter: false for requests its limits leave alone (other methods, excluded routes,
 * preflights).
 *
 * @example
 * const applies = guardFilter(settings);
 * if (!applies(facts)) return untouched;
 */
export function guardFilter(settings: GuardSettings): (facts: RequestFacts) => boolean {
  const { methods, excluded, chargePreflight } = settings;
  return (facts) => {
    if (facts.preflight === true && !chargePreflight) return false;
    if (methods === undefined && excluded === undefined) return true;
    const method = typeof facts.method === 'string' ? facts.method.toUpperCase() : '';
    if (methods !== undefined && !methods.has(method)) return false;
    return excluded === undefined || !excluded.matches(method, facts.path);
  };
}
