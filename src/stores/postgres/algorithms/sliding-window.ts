import type { Rule } from '../../../core/rules/rule.js';
import type { SlidingWindowRule } from '../../../core/rules/sliding-window.js';
import type { AlgorithmModule } from './algorithm-module.js';
import {
  alignedPrelude,
  alignedStart,
  readWindowRow,
  windowAdjustSql,
  windowFamily,
  windowRuleSql,
} from './window-counts.js';

const prelude = alignedPrelude(true);

/** Refunds and settlements: the take's window is the aligned one holding its time. */
const adjust = windowAdjustSql(prelude, 2, (taken) => alignedStart(taken, '$2::bigint'));

/**
 * Sliding window (src/core/rules/sliding-window.ts): counts of the current and the previous window of
 * `windowMs`, aligned to the Unix epoch, in `window_counters` (see window-counts.ts, which
 * weighs the previous count exactly as the core does). Rule parameters: $1 rule, $2 the window's
 * length in ms, $3 penalty (a refund's: $1 and $2). A count weighs until the end of the window
 * after its own.
 */
export const slidingWindowModule: AlgorithmModule = {
  kind: 'sliding-window',
  bind(name: string, bound: Rule) {
    const rule = bound as SlidingWindowRule;
    const params = [name, rule.windowMs, rule.penalty];
    const entry = [rule.windowMs];
    const adjusting = [name, rule.windowMs];
    return {
      ruleParams: () => params,
      adjustParams: () => adjusting,
      entryParams: () => entry,
      read: readWindowRow,
      prune: () => undefined,
    };
  },
  ruleSql: (names) => windowRuleSql(names, prelude, adjust),
  family: windowFamily,
  entryTypes: ['bigint'],
  entrySource: (first) => `SELECT x.ord, x.rule, x.bucket, x.cost, x.quota, n.now_ms,
    ${alignedStart('n.now_ms', 'x.w')} AS a_start, ${alignedStart('n.now_ms', 'x.w')} + x.w AS a_end,
    x.w, true AS slides, x.w AS tail
  FROM unnest($${first}::bigint[], $${first + 1}::text[], $${first + 2}::text[], $${first + 3}::bigint[],
    $${first + 4}::bigint[], $${first + 5}::bigint[]) AS x(ord, rule, bucket, cost, quota, w) CROSS JOIN n`,
};
