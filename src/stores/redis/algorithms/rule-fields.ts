import { optionError } from '../../../core/errors.js';
import type { Rule } from '../../../core/rules/rule.js';

/**
 * A field of a rule that a module sends to Redis: a whole number the script can count with.
 * The registry finds a module by `rule.kind` alone, so a rule of another origin that claims a
 * built-in kind is checked here, at bind, instead of failing in Lua on every take.
 * @throws SluiceError `SLUICE_CONFIG`
 */
export function wholeField(rule: Rule, field: string): number {
  const value = (rule as unknown as Record<string, unknown>)[field];
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw optionError(`RedisStore rule ${field}`, `a whole number (a ${rule.kind} rule made by sluice)`);
  }
  return value;
}

/** The rule's penalty as the script reads it: `"1"` or `"0"`. */
export function penaltyFlag(rule: Rule): string {
  if (typeof rule.penalty !== 'boolean') {
    throw optionError('RedisStore rule penalty', `a boolean (a ${rule.kind} rule made by sluice)`);
  }
  return rule.penalty ? '1' : '0';
}
