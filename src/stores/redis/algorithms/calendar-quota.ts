import { CalendarPeriods, type CalendarUnit, type IsoWeekday } from '../../../core/calendar.js';
import type { Rule } from '../../../core/rules/rule.js';
import type { RedisAlgorithmModule, RuleEncoder } from './algorithm.js';
import { countDecision } from './count-decision.js';
import { penaltyFlag, wholeField } from './rule-fields.js';
import { countInWindowLua } from './window-count.js';

/**
 * The calendar quota (`core/rules/calendar-quota.ts`) in Redis, per local hour, day, week or month.
 *
 * Lua cannot read an IANA time zone database, so Node sends the bounds of four periods around
 * its own time (`b0` the start of the period before, `b1` of the current one, `b2` of the next,
 * `b3` of the one after); the script picks the period holding the server's `now`, so a skew of
 * up to a period needs no second round trip. When none holds it the script changes nothing and
 * replies -3; Node, having learnt the server's time from that reply, sends the right periods.
 *
 * State `"<periodStartMs>:<count>:<periodEndMs>"` (a state without its end, written by an
 * earlier version, still reads). The end is stored because a take whose time lies in an earlier
 * period than the stored one counts against the stored period (a quota never moves backwards),
 * and Lua cannot compute that period's end: the bounds sent may not reach it.
 *
 * Parameters: `penalty`, `ruleLimit`, `b0`..`b3`. A per-call limit; replies of 4 (the window is
 * the counted period's length: 23 to 25 hours for a day, 28 to 31 days for a month).
 */
export const calendarQuotaAlgorithm: RedisAlgorithmModule = {
  kind: 'calendar-quota',
  params: ['penalty', 'ruleLimit', 'b0', 'b1', 'b2', 'b3'],
  callLimit: true,
  replyWidth: 4,
  lua: `  -- core/rules/calendar-quota.ts, decide(): the local period holding now, among the four sent.
  local q = limit or ruleLimit
  local s, f = quotaPeriod(now, b0, b1, b2, b3)
  remaining, reset, window = 0, 0, 0
  retry = -3
  if s then
    local used = 0
    if sa == s then
      used = sb
    elseif sa and sa > s then
      -- The clock stepped back (a caller's clock, or another node's a second behind across
      -- midnight) into a period before the stored one: the take counts against the stored
      -- period, which never moves backwards and never restarts. A state from before the
      -- period's end was stored ends where the period after it starts, among those sent, or a
      -- period of the current one's length later.
      local e = sc
      if not e then
        if sa == b2 then e = b3 else e = sa + f - s end
      end
      s, f, used = sa, e, sb
    end
    reset = f - now
    window = f - s
${countInWindowLua}    -- The period's end is stored with its count.
    if na then nc = f end
  end
`,
  // A refusal means a count in the period, spent when the period ends, after reset.
  held: 'reset',
  adjustLua: `  -- core/rules/calendar-quota.ts, adjust(), and core/rules/window-count.ts: a refund comes off the count only
  -- while the stored period is the take's (Node sends the take's period start), never below 0;
  -- a charge goes to the period that counts now (the one holding now among the four sent, or
  -- the stored one when it is later), saturating as a penalty does.
  if delta < 0 then
    if sa == taken and sb > 0 then
      local left = sb + delta
      if left < 0 then left = 0 end
      na, nb, nc = sa, left, sc
    end
  else
    local s, f = quotaPeriod(now, b0, b1, b2, b3)
    if not s then
      status = -3
    else
      local charged = delta
      if sa == s then
        charged = sb + delta
      elseif sa and sa > s then
        s, f, charged = sa, quotaEnd(sa, sc, b0, b1, b2, b3), sb + delta
      end
      if charged > MAX_PENALTY then charged = MAX_PENALTY end
      na, nb, nc = s, charged, f
    end
  end
  if na then
    -- The horizon: the end of the stored period while it holds a count.
    local e = quotaEnd(na, nc, b0, b1, b2, b3)
    ttl = 0
    if nb > 0 and e > now then ttl = e - now end
  end
`,
  // The period holding now among the four sent (false, false when none does); the end of the
  // stored period starting at sa: the stored end, or for a value written before ends were
  // stored, the next start among those sent, else a period of the current length on.
  luaFunctions: `local function quotaPeriod(now, b0, b1, b2, b3)
  if now >= b1 and now < b2 then return b1, b2 end
  if now >= b0 and now < b1 then return b0, b1 end
  if now >= b2 and now < b3 then return b2, b3 end
  return false, false
end
local function quotaEnd(sa, sc, b0, b1, b2, b3)
  if sc then return sc end
  if sa == b0 then return b1 elseif sa == b1 then return b2 elseif sa == b2 then return b3 end
  return sa + b2 - b1
end
`,
  encoder(rule: Rule, name: string, tag: number): RuleEncoder {
    const fields = rule as unknown as { timeZone?: unknown; per?: unknown; weekStart?: unknown };
    const ruleLimit = wholeField(rule, 'limit');
    const penalty = penaltyFlag(rule);
    // Our own calendar, so that looking at the periods around now never evicts the one the
    // rule's calendar (shared with a memory store) has cached.
    const periods = new CalendarPeriods(
      fields.timeZone as string,
      (fields.per ?? 'day') as CalendarUnit,
      (fields.weekStart ?? 1) as IsoWeekday,
    );
    let spec: readonly string[] = [];
    let start = 0;
    let end = -1;
    return {
      timed: true,
      spec(now: number): readonly string[] {
        if (now >= start && now < end) return spec;
        start = periods.startOf(now);
        end = periods.endOf(now);
        const before = periods.startOf(start - 1);
        const after = periods.endOf(end);
        spec = [
          String(tag),
          penalty,
          String(ruleLimit),
          String(before),
          String(start),
          String(end),
          String(after),
        ];
        return spec;
      },
      windowOf: (at) => periods.startOf(at),
      decision: (reply) => countDecision(reply, name, ruleLimit, reply.windowMs),
    };
  },
};
