import type { AnchoredWindowRule } from '../../../core/rules/anchored-window.js';
import { lengthWindowModule } from './window-counts.js';

/**
 * The current window of an anchored window around the statement's time `now`: one that would
 * start now and last `$2` ms; window-counts.ts keeps the stored one instead while it runs
 * (`anchored`).
 */
const prelude = (
  now: string,
): string => `SELECT a.now_ms, a.now_ms AS a_start, a.now_ms + $2::bigint AS a_end,
    $2::bigint AS w, false AS slides, true AS anchored, 0::bigint AS tail
  FROM (SELECT ${now} AS now_ms) a`;

/**
 * A refunded take's window: the stored one when it still runs at the statement's time and the
 * take's time lies in it; NULL otherwise (its window cannot be found from its time alone), which
 * gives nothing back. A count of 0 gives nothing back either (window-counts.ts checks it).
 */
const takenWindow = (taken: string, stored: string): string =>
  `CASE WHEN s.now_ms < ${stored} + $2::bigint AND ${taken} >= ${stored} AND ${taken} < ${stored} + $2::bigint
    THEN ${stored} END`;

/**
 * Anchored window (src/core/rules/anchored-window.ts): a count per window of `periodMs` that
 * starts at the key's first take, in `window_counters` (see window-counts.ts). A count outlives
 * its window by nothing. Rule parameters: $1 rule, $2 the window's length in ms, $3 penalty (a
 * refund's: $1 and $2).
 */
export const anchoredWindowModule = lengthWindowModule({
  kind: 'anchored-window',
  lengthOf: (rule) => (rule as AnchoredWindowRule).periodMs,
  prelude,
  takenStart: takenWindow,
  entryWindow:
    'n.now_ms AS a_start, n.now_ms + x.w AS a_end, x.w, false AS slides, true AS anchored, 0::bigint AS tail',
});
