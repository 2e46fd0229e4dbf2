import { SluiceError } from '../../core/errors.js';

// Letters, digits and ". _ - :": safe inside a Redis key (no hash-tag braces), a PostgreSQL
// text value, a log line and a metric label, and short enough to repeat in every stored key.
const ruleNamePattern = /^[A-Za-z0-9._:-]{1,64}$/;

/** What a rule name may hold, in the words every store's and the limiter's error uses. */
const RULE_NAME_EXPECTED = '1-64 characters of letters, digits, ".", "_", "-" or ":"';

/**
 * Checks a rule name the same way in the limiter and in every store, so that a name accepted by
 * one is accepted by all.
 *
 * @param option the option's name for the error message, e.g. `'createLimiter name'`
 * @throws SluiceError `SLUICE_CONFIG` naming the option and what it must be (never the value)
 * @example checkRuleName('login', 'createLimiter name') // passes
 */
export function checkRuleName(name: unknown, option: string): asserts name is string {
  if (typeof name !== 'string' || !ruleNamePattern.test(name)) {
    throw new SluiceError('SLUICE_CONFIG', `${option} must be ${RULE_NAME_EXPECTED}`);
  }
}

/**
 * Rules and concurrency limits share one namespace per store (and, in Redis, one key layout): a
 * name is bound once. Every store checks a new binding with this.
 *
 * @param store the store's class name for the message, e.g. `'MemoryStore'`
 * @throws SluiceError `SLUICE_CONFIG` when one of `bound` holds the name
 * @example assertNameFree('RedisStore', name, this.rules, this.leaseGroups)
 */
export function assertNameFree(store: string, name: string, ...bound: ReadonlyMap<string, unknown>[]): void {
  if (bound.some((names) => names.has(name))) {
    throw new SluiceError(
      'SLUICE_CONFIG',
      `a rule named ${JSON.stringify(name)} is already bound to this ${store}; every limit needs its own name`,
    );
  }
}
