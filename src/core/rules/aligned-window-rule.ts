import type { BucketState } from '../state.js';
import { readWindowOptions } from './window-options.js';
import { WindowCountRule } from './window-count-rule.js';

/**
 * What the fixed and the sliding window share beyond counting per window (see
 * {@link WindowCountRule}): windows of `windowMs` aligned to the Unix epoch, so every node and
 * store agrees where one starts. Each subclass brings its kind, its shape, its horizon and its
 * decision.
 *
 * @example
 * fixedWindow({ limit: 5, window: '1m' }) instanceof AlignedWindowRule; // true
 */
export abstract class AlignedWindowRule extends WindowCountRule {
  /** The window's length in ms. */
  readonly windowMs: number;

  /** @param owner the rule's factory name, for error messages (`fixedWindow window`) */
  constructor(owner: string, options: unknown) {
    const settings = readWindowOptions(owner, options);
    super(settings);
    this.windowMs = settings.windowMs;
  }

  /** An untouched window: no count in it (nor in the one before). */
  initialState(now: number): BucketState {
    const window = Math.floor(now / this.windowMs) * this.windowMs;
    return { value: 0, window, previous: 0, blockedUntil: 0, blockMs: 0 };
  }
}
