import type { Rule } from '../../../core/rules/rule.js';
import type { RuleEncoder } from './algorithm.js';
import { countDecision } from './count-decision.js';
import { penaltyFlag, wholeField } from './rule-fields.js';

/**
 * A take counted in a window in Lua, the shared half of the modules that count per window of
 * one length (core/rules/window-count.ts, `decideWindowCount`), once each has found its window:
 * it reads `q` (the limit that applies), `s` (the window's start), `used` (its count) and
 * `reset` (ms to its end), and sets `remaining`, `retry` and, when the take charges, `na`, `nb`
 * and `ttl` (a refusal under a penalty of a single take is charged too, saturating).
 */
export const countInWindowLua = `  remaining = 0
  if used < q then remaining = q - used end
  if asked > q then
    retry = -1
  elseif asked <= remaining then
    retry = 0
    if cost > 0 then
      remaining = remaining - cost
      na, nb, ttl = s, used + cost, reset
    end
  else
    retry = reset
    if single and penalty == 1 and cost > 0 then
      local charged = used + cost
      if charged > MAX_PENALTY then charged = MAX_PENALTY end
      na, nb, ttl = s, charged, reset
    end
  end
`;

/**
 * The TTL after an adjustment of a window of `w` ms from its start `na` with count `nb`: the
 * time to the window's end while it holds a count, else 0. Read when the adjustment writes.
 */
export const windowEndTtlLua = `  if na then
    ttl = 0
    if nb > 0 and na + w > now then ttl = na + w - now end
  end
`;

/**
 * The encoder of a rule counted per window of one length, read from the rule's `lengthField`
 * (in ms): parameters `penalty`, `ruleLimit` and the length; a per-call count limit; replies of
 * 3 (the window's length is known to Node). `windowOf` is the rule's `RuleEncoder.windowOf`.
 */
export function windowCountEncoder(
  lengthField: string,
  windowOf: (at: number, lengthMs: number) => number,
): (rule: Rule, name: string, tag: number) => RuleEncoder {
  return (rule, name, tag) => {
    const ruleLimit = wholeField(rule, 'limit');
    const lengthMs = wholeField(rule, lengthField);
    const spec = [String(tag), penaltyFlag(rule), String(ruleLimit), String(lengthMs)];
    return {
      timed: false,
      spec: () => spec,
      windowOf: (at) => windowOf(at, lengthMs),
      decision: (reply) => countDecision(reply, name, ruleLimit, lengthMs),
    };
  };
}
