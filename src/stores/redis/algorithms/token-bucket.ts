import { makeDecision, type Decision } from '../../../core/decision.js';
import type { Rule } from '../../../core/rule.js';
import type { RedisAlgorithm, RuleEncoder } from './algorithm.js';
import { penaltyFlag, wholeField } from './rule-fields.js';

/**
 * The token bucket (`core/gcra.ts`) in Redis.
 *
 * State `"<ms>:<frac>"`: the GCRA arrival time as whole ms since the Unix epoch plus the
 * sub-millisecond remainder in scaled units (`0 <= frac < rate`). The scaled arithmetic of the
 * core only ever needs the arrival time relative to `now` (at most 2 × burst × period scaled
 * units, checked to be a safe integer when the rule is made), so there is no epoch and no
 * horizon after which numbers lose exactness.
 *
 * Parameters: `rate` (the rule's limit: time is scaled by it), `unit` (the period in ms: what one
 * token costs in scaled time), `burst`, `penalty`. No per-call limit; replies of 3 (the window
 * is the period, known to Node).
 */
export const tokenBucketAlgorithm: RedisAlgorithm = {
  kind: 'token-bucket',
  params: ['rate', 'unit', 'burst', 'penalty'],
  callLimit: false,
  reserves: true,
  replyWidth: 3,
  lua: `  -- core/gcra.ts, decide(). Exact division of whole numbers held in doubles: % is
  -- a - floor(a / b) * b, and the quotient of a double division may round up across an
  -- integer, so the remainder is corrected into [0, b); (a - r) / b is then exact.
  local tolerance = burst * unit
  local queued = 0
  if sa and sa >= now then queued = (sa - now) * rate + sb end
  local after = queued + asked * unit
  -- wait: a reservation's longest wait in ms (0 for a take), admitting a charge whose slot is up
  -- to that far ahead; waited, the ms until its slot.
  if cost > 0 and asked <= burst and after <= tolerance + wait * rate then
    -- Admitted and charged.
    local r = after % rate
    if r < 0 then r = r + rate elseif r >= rate then r = r - rate end
    local q = (after - r) / rate
    ttl = q
    if r > 0 then ttl = q + 1 end
    local d = tolerance - after
    if d > 0 then
      local r2 = d % unit
      if r2 < 0 then r2 = r2 + unit elseif r2 >= unit then r2 = r2 - unit end
      remaining = (d - r2) / unit
    else
      remaining = 0
      if d < 0 then
        -- A remainder of its own: r is the new state's, stored below.
        local rw = -d % rate
        if rw < 0 then rw = rw + rate elseif rw >= rate then rw = rw - rate end
        waited = (-d - rw) / rate
        if rw > 0 then waited = waited + 1 end
      end
    end
    retry = 0
    reset = ttl
    na = now + q
    nb = r
  else
    remaining = 0
    if queued < tolerance then
      local d = tolerance - queued
      local r = d % unit
      if r < 0 then r = r + unit elseif r >= unit then r = r - unit end
      remaining = (d - r) / unit
    end
    local r = queued % rate
    if r < 0 then r = r + rate elseif r >= rate then r = r - rate end
    reset = (queued - r) / rate
    if r > 0 then reset = reset + 1 end
    if asked > burst then
      retry = -1
    elseif after <= tolerance then
      retry = 0
    else
      local d = after - tolerance
      r = d % rate
      if r < 0 then r = r + rate elseif r >= rate then r = r - rate end
      retry = (d - r) / rate
      if r > 0 then retry = retry + 1 end
      if single and wait == 0 and penalty == 1 and cost > 0 then
        -- Debt is capped at one extra full refill (core/gcra.ts).
        local charged = after
        if charged > 2 * tolerance then charged = 2 * tolerance end
        r = charged % rate
        if r < 0 then r = r + rate elseif r >= rate then r = r - rate end
        local q = (charged - r) / rate
        ttl = q
        if r > 0 then ttl = q + 1 end
        na = now + q
        nb = r
      end
    end
  end
`,
  // A refused bucket is full again after reset, its time to full.
  held: 'reset',
  adjustLua: `  -- core/gcra.ts, adjust(): the time queued ahead of now moves back by a refund, by the
  -- take's units not refilled yet (those left between now and refilled, at most -delta tokens),
  -- never below 0 (a bucket already full, or a take refilled already, gets nothing); or forward
  -- by a charge, the debt capped at one extra full refill as for a penalty. Divisions exact as
  -- in the decision.
  local queued = 0
  if sa and sa >= now then queued = (sa - now) * rate + sb end
  local q = false
  if delta < 0 then
    local left = (refilled - now) * rate
    if queued > 0 and left > 0 then
      local give = -delta * unit
      if give > left then give = left end
      q = queued - give
      if q < 0 then q = 0 end
    end
  else
    q = queued + delta * unit
    if q > 2 * burst * unit then q = 2 * burst * unit end
  end
  if q then
    local r = q % rate
    if r < 0 then r = r + rate elseif r >= rate then r = r - rate end
    local whole = (q - r) / rate
    na, nb = now + whole, r
    ttl = whole
    if r > 0 then ttl = whole + 1 end
  end
`,
  encoder(rule: Rule, name: string, tag: number): RuleEncoder {
    const limit = wholeField(rule, 'limit');
    const periodMs = wholeField(rule, 'periodMs');
    const burst = wholeField(rule, 'burst');
    const spec = [String(tag), String(limit), String(periodMs), String(burst), penaltyFlag(rule)];
    return {
      timed: false,
      spec: () => spec,
      windowOf: () => 0,
      decision(allowed, remaining, retryAfterMs, resetMs, _windowMs, cost): Decision {
        return makeDecision(allowed, name, limit, burst, remaining, cost, retryAfterMs, resetMs, periodMs);
      },
    };
  },
};
