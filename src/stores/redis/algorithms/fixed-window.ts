import { alignedWindowAlgorithm } from './aligned-window.js';
import { countInWindowLua, windowEndTtlLua } from './window-count.js';

/**
 * The fixed window (`core/fixed-window.ts`) in Redis: a count per window of `w` ms, windows
 * aligned to the Unix epoch.
 *
 * State `"<windowStartMs>:<count>"`. A take whose time lies in a window before the stored one (a
 * clock stepped back, a node whose clock lags) counts against the stored window, which never
 * moves backwards. The key lives until its window ends.
 *
 * Parameters, per-call limit and replies: see aligned-window.ts.
 */
export const fixedWindowAlgorithm = alignedWindowAlgorithm({
  kind: 'fixed-window',
  lua: `  -- core/fixed-window.ts, decide(), and core/rules/window-count.ts.
  local q = limit or ruleLimit
  local s = floor(now / w) * w
  if sa and sa > s then s = sa end
  local used = 0
  if sa == s then used = sb end
  reset = s + w - now
${countInWindowLua}`,
  // A refusal means a count in the window, spent when the window ends, after reset.
  held: 'reset',
  adjustLua: `  -- core/fixed-window.ts, adjust(), and core/rules/window-count.ts: a refund comes off the count
  -- only while the stored window is the take's, never below 0; a charge goes to the window that
  -- counts now, saturating as a penalty does.
  if delta < 0 then
    if sa == taken and sb > 0 then
      local left = sb + delta
      if left < 0 then left = 0 end
      na, nb = sa, left
    end
  else
    local s = floor(now / w) * w
    if sa and sa > s then s = sa end
    local charged = delta
    if sa == s then charged = sb + delta end
    if charged > MAX_PENALTY then charged = MAX_PENALTY end
    na, nb = s, charged
  end
${windowEndTtlLua}`,
});
