import { MAX_COUNT } from '../bounds.js';
import { parseRuleDuration } from '../duration.js';
import { optionError } from '../errors.js';
import { checkOptionKeys } from '../options.js';
import { readBlockOptions, type BlockPolicy } from './lockout.js';

/** The longest window a fixed or sliding window may have: 366 days, a leap year. */
export const MAX_WINDOW_MS = 366 * 86_400_000;

/** What the fixed and the sliding window read from their options, checked. */
export interface WindowSettings {
  readonly limit: number;
  readonly windowMs: number;
  readonly penalty: boolean;
  readonly block: BlockPolicy | undefined;
}

const windowKeys = ['limit', 'window', 'penalty', 'block'] as const;

/**
 * Checks the options of a counting window (`fixedWindow`, `slidingWindow`): no unknown key;
 * `limit` a whole number from 1 to {@link MAX_COUNT}; `window` a duration string from `"1ms"` to
 * `"366d"`; `penalty` a boolean; `block` a lockout (see `lockout.ts`). Every failure is a SLUICE_CONFIG naming the option
 * (`fixedWindow window`), without the value received.
 */
export function readWindowOptions(owner: string, options: unknown): WindowSettings {
  checkOptionKeys(owner, options, windowKeys);
  const { limit, window, penalty = false, block } = options as Record<string, unknown>;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_COUNT)
    throw optionError(`${owner} limit`, `a whole number from 1 to ${MAX_COUNT}`);
  if (typeof penalty !== 'boolean') throw optionError(`${owner} penalty`, 'a boolean');
  const windowMs = parseWindowLength(window, `${owner} window`);
  return { limit, windowMs, penalty, block: readBlockOptions(owner, block) };
}

function parseWindowLength(value: unknown, option: string): number {
  const expected = 'a duration string from "1ms" to "366d", like "1s", "1m", "1h" or "1d"';
  return parseRuleDuration(value, option, expected, MAX_WINDOW_MS);
}
