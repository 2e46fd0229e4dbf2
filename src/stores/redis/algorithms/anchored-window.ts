import type { RedisAlgorithmModule } from './algorithm.js';
import { countInWindowLua, windowCountEncoder, windowEndTtlLua } from './window-count.js';

/**
 * The anchored window (`core/rules/anchored-window.ts`) in Redis: a count per window of `w` ms
 * that starts at the key's first take.
 *
 * State `"<windowStartMs>:<count>"`, as the fixed window's. The window runs while the count is
 * above 0 and `now` is before its end; otherwise a take starts one at `now`. The key lives until
 * its window ends.
 *
 * A refunded take's window cannot be found from its time alone (it depends on the key's
 * history), so Node sends the take's time itself as `taken` (see `windowOf`), and the script
 * gives back only when that time lies in the running window.
 *
 * Parameters: `penalty`, `ruleLimit`, `w`. A per-call limit; replies of 3 (the window is `w`,
 * known to Node).
 */
export const anchoredWindowAlgorithm: RedisAlgorithmModule = {
  kind: 'anchored-window',
  params: ['penalty', 'ruleLimit', 'w'],
  callLimit: true,
  lua: `  -- core/rules/anchored-window.ts, decideBucket(), and core/rules/window-count.ts.
  local q = limit or ruleLimit
  local s, used = now, 0
  if sa and sb > 0 and now < sa + w then s, used = sa, sb end
  reset = s + w - now
${countInWindowLua}`,
  // A refusal means a count in the running window, spent when it ends, after reset.
  held: 'reset',
  adjustLua: `  -- core/rules/anchored-window.ts, adjust(), and core/rules/window-count.ts: a refund comes off
  -- the running window's count only when the take's time (taken) lies in it, never below 0; a
  -- charge goes to the running window, or starts one now, saturating as a penalty does.
  local running = sa and sb > 0 and now < sa + w
  if delta < 0 then
    if running and sa <= taken and taken < sa + w then
      local left = sb + delta
      if left < 0 then left = 0 end
      na, nb = sa, left
    end
  else
    local s, charged = now, delta
    if running then s, charged = sa, sb + delta end
    if charged > MAX_PENALTY then charged = MAX_PENALTY end
    na, nb = s, charged
  end
${windowEndTtlLua}`,
  // The take's time itself: the script finds whether it lies in the running window.
  encoder: windowCountEncoder('periodMs', (at) => at),
};
