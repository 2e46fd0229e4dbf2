import type { Rule } from '../../../core/rules/rule.js';
import type { AlgorithmModule } from './algorithm-module.js';
import { alignedPrelude, alignedStart, lengthWindowModule } from './window-counts.js';

/** What the store reads of a window aligned to the Unix epoch. */
interface AlignedWindowRule extends Rule {
  readonly windowMs: number;
}

/**
 * The module of a window of `windowMs` aligned to the Unix epoch, in `window_counters` (see
 * window-counts.ts): the fixed window, and the sliding window (`slides`), whose previous count
 * weighs and outlives its window by one more. Rule parameters: $1 rule, $2 the window's length
 * in ms, $3 penalty (a refund's: $1 and $2).
 */
export function alignedWindowModule(kind: string, slides: boolean): AlgorithmModule {
  return lengthWindowModule({
    kind,
    lengthOf: (rule) => (rule as AlignedWindowRule).windowMs,
    prelude: alignedPrelude(slides),
    // Refunds and settlements: the take's window is the aligned one holding its time.
    takenStart: (taken) => alignedStart(taken, '$2::bigint'),
    entryWindow: `${alignedStart('n.now_ms', 'x.w')} AS a_start, ${alignedStart('n.now_ms', 'x.w')} + x.w AS a_end,
    x.w, ${String(slides)} AS slides, false AS anchored, ${slides ? 'x.w' : '0::bigint'} AS tail`,
  });
}
