import { alignedWindowAlgorithm } from './aligned-window.js';

/**
 * The sliding window (`core/sliding-window.ts`) in Redis: the counts of the current and the
 * previous epoch-aligned window of `w` ms, the previous one weighing by the part of it that a
 * window ending now still covers. The weight is `ceil((prev * (w - elapsed)) / w)` on doubles in
 * exactly the core's order, and the retry advice is searched the same way, so that both agree
 * bit for bit.
 *
 * State `"<windowStartMs>:<count>:<previousCount>"`. A take whose time lies in a window before
 * the stored one counts against the stored window as at its first instant (windows never move
 * back). The key lives until the end of the window after its own, where its count stops
 * weighing.
 *
 * Parameters, per-call limit and replies: see aligned-window.ts.
 */
export const slidingWindowAlgorithm = alignedWindowAlgorithm({
  kind: 'sliding-window',
  lua: `  -- core/sliding-window.ts, decide().
  local q = limit or ruleLimit
  local aligned = floor(now / w) * w
  local s, elapsed, cur, prev
  if sa and sa > aligned then
    s, elapsed, cur, prev = sa, 0, sb, sc or 0
  else
    s, elapsed = aligned, now - aligned
    if sa == aligned then
      cur, prev = sb, sc or 0
    elseif sa == aligned - w then
      cur, prev = 0, sb
    else
      cur, prev = 0, 0
    end
  end
  local left = q - cur
  if prev ~= 0 then left = left - ceil((prev * (w - elapsed)) / w) end
  remaining = 0
  if left > 0 then remaining = left end
  reset = s + w - now
  local charge = false
  if asked > q then
    retry = -1
  elseif asked <= remaining then
    retry = 0
    if cost > 0 then
      remaining = remaining - cost
      charge = true
    end
  else
    -- The earliest time from which a take of asked is admitted if nothing else is charged:
    -- later in this window only the previous count's weight falls; in the next window this
    -- window's count is the previous one; two windows on, nothing weighs.
    local from = 0
    if now > s then from = now - s end
    local wait = earliest(prev, w, q - cur - asked, from)
    if wait >= w then
      wait = earliest(cur, w, q - asked, 0)
      if wait < w then wait = w + wait else wait = 2 * w end
    end
    retry = s + wait - now
    charge = single and penalty == 1 and cost > 0
  end
  if charge then
    if sa == s then
      local charged = sb + cost
      if charged > MAX_PENALTY then charged = MAX_PENALTY end
      na, nb, nc = s, charged, sc or 0
    else
      na, nb, nc = s, cost, 0
      if sa == s - w then nc = sb end
    end
    ttl = s + 2 * w - now
  end
`,
  // A count weighs until the end of the window after its own: reset, then one more window.
  held: 'reset + w',
  adjustLua: `  -- core/sliding-window.ts, adjust(): a refund comes off the stored window's count while it
  -- is the take's window, or off the previous count while that is the take's, never below 0;
  -- a charge goes to the window that counts now, rolling the state into it as a take does.
  local prev = sc or 0
  if delta < 0 then
    if sa == taken and sb > 0 then
      local left = sb + delta
      if left < 0 then left = 0 end
      na, nb, nc = sa, left, prev
    elseif sa == taken + w and prev > 0 then
      local left = prev + delta
      if left < 0 then left = 0 end
      na, nb, nc = sa, sb, left
    end
  else
    local s = floor(now / w) * w
    if sa and sa > s then s = sa end
    if sa == s then
      local charged = sb + delta
      if charged > MAX_PENALTY then charged = MAX_PENALTY end
      na, nb, nc = s, charged, prev
    else
      na, nb, nc = s, delta, 0
      if sa == s - w then nc = sb end
    end
  end
  if na then
    -- The horizon: a count weighs until the end of the window after its own, a previous count
    -- alone until the end of the stored window.
    local e = now
    if nb > 0 then e = na + 2 * w elseif nc > 0 then e = na + w end
    ttl = 0
    if e > now then ttl = e - now end
  end
`,
  // The functions of the retry advice: core/sliding-window.ts's weigh() and earliest(), the
  // least elapsed in [from, w) at which the previous count's weight fits in room, or w.
  luaFunctions: `local function weigh(prev, w, elapsed)
  if prev == 0 then return 0 end
  return ceil((prev * (w - elapsed)) / w)
end
local function earliest(prev, w, room, from)
  if room < 0 then return w end
  if weigh(prev, w, from) <= room then return from end
  local e = w - floor((room * w) / prev)
  if e <= from then e = from + 1 end
  if e > w then e = w end
  while e > from + 1 and weigh(prev, w, e - 1) <= room do e = e - 1 end
  while e < w and weigh(prev, w, e) > room do e = e + 1 end
  return e
end
`,
});
