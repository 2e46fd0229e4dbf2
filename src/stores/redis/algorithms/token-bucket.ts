import { makeDecision, type Decision } from '../../../core/decision.js';
import { MAX_MIGRATED_QUEUE } from '../../../core/rules/token-bucket.js';
import type { BucketTier, CallLimit, Rule } from '../../../core/rules/rule.js';
import type { RedisAlgorithmModule, RuleEncoder } from './algorithm.js';
import { penaltyFlag, wholeField } from './rule-fields.js';

/**
 * Lua reading the time queued ahead of `now` (`queued`, scaled units) for a decision or an
 * adjustment, and binding `rate`, `unit`, `burst` and `tolerance` to the parameters it runs
 * under: the call's tier (`tr`, `tu`, `tb`) or the rule's own. A state and a call both in the
 * rule's own scale (every key written before tiers, and every take without one) are read as
 * they always were, after two tests. Otherwise (core/rules/token-bucket.ts, queuedUnder() and charge()'s
 * tags) the state is read in the scale it was kept in (rate `sc`, tolerance `sd`; the rule's own
 * when untagged), migrated to the call's, and the tags a write carries are set (`nc`, `nd`;
 * none under the rule's own rate and tolerance). Inline rather than a function: a function in
 * the scripts' prelude is a closure made on every call, which the common path would pay for.
 */
const READ_QUEUED = `  local tolerance = burst * unit
  local queued = 0
  if sd or tr then
    local keptRate, keptTolerance = rate, tolerance
    if sd then keptRate, keptTolerance = sc, sd end
    if tr then
      -- rate and tolerance are still the rule's own here.
      local t = tb * tu
      if tr ~= rate or t ~= tolerance then nc, nd = tr, t end
      rate, unit, burst, tolerance = tr, tu, tb, t
    end
    if sa and sa >= now then queued = (sa - now) * keptRate + sb end
    if queued > 0 and (keptRate ~= rate or keptTolerance ~= tolerance) then
      -- The fraction in use and the time until full both kept, the larger queue wins, no debt
      -- cap (a switch never adds tokens). Multiply, then divide, then ceil: the core's double
      -- operations in its order; cut at the core's MAX_MIGRATED_QUEUE (2^52).
      local byTime = ceil((queued * rate) / keptRate)
      queued = ceil((queued * tolerance) / keptTolerance)
      if byTime > queued then queued = byTime end
      if queued > ${MAX_MIGRATED_QUEUE} then queued = ${MAX_MIGRATED_QUEUE} end
    end
  elseif sa and sa >= now then
    queued = (sa - now) * rate + sb
  end
`;

/**
 * The token bucket (`core/rules/token-bucket.ts`) in Redis.
 *
 * State `"<ms>:<frac>"`: the GCRA arrival time as whole ms since the Unix epoch plus the
 * sub-millisecond remainder in scaled units (`0 <= frac < rate`). The scaled arithmetic of the
 * core only ever needs the arrival time relative to `now` (at most 2 × burst × period scaled
 * units, checked to be a safe integer when the rule is made), so there is no epoch and no
 * horizon after which numbers lose exactness.
 *
 * Per-call tiers (a plan's rate, period and burst, `BucketTier`): `frac` is in units of 1/rate
 * ms, so a state written under a tier whose rate or tolerance (burst × period) differs from the
 * rule's is tagged with both, `"<ms>:<frac>:<rate>:<tolerance>"`, exactly as the core keeps them
 * in its state's `window` and `previous`. A value of two fields is in the rule's own scale: every
 * key written before tiers existed, and every write under the rule's own rate and tolerance
 * (the tags are dropped then, as the core drops them). A value of three fields (another
 * algorithm's, under a name bound again) reads as two, as it did before. A take carries its tier
 * to the scripts after its entry (see scripts.ts: `tr`, `tu`, `tb`); a take without one sends
 * nothing more. Reading a state under other parameters than its own migrates it as the core's
 * `queuedUnder` does, with the same double operations in the same order (multiply, divide,
 * ceil, for the fraction in use and for the time until full, the larger kept), so that both
 * agree to the scaled unit; the decision, the reservation and the adjustment then run under the call's parameters, and a write stores the
 * arrival time in the scale of the call's rate with its tags. A refusal that writes nothing
 * leaves the state in its own scale; a lockout that starts then writes it back as read. A key's
 * TTL is its time to full in the scale it is written in.
 *
 * Parameters: `rate` (the rule's limit: time is scaled by it), `unit` (the period in ms: what one
 * token costs in scaled time), `burst`, `penalty`. No per-call limit; replies of 3 (the window
 * is the period, known to Node; the tier's, when the call has one).
 */
export const tokenBucketAlgorithm: RedisAlgorithmModule = {
  kind: 'token-bucket',
  params: ['rate', 'unit', 'burst', 'penalty'],
  tiers: true,
  reserves: true,
  lua: `  -- core/rules/token-bucket.ts, decide(). Exact division of whole numbers held in doubles: % is
  -- a - floor(a / b) * b, and the quotient of a double division may round up across an
  -- integer, so the remainder is corrected into [0, b); (a - r) / b is then exact.
${READ_QUEUED}  local after = queued + asked * unit
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
      if single and penalty == 1 and cost > 0 then
        -- Debt is capped at one extra full refill (core/rules/token-bucket.ts).
        local charged = after
        if charged > 2 * tolerance then charged = 2 * tolerance end
        -- Never below the queue already there (one migrated from a slower tier may be longer).
        if charged < queued then charged = queued end
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
  // A refused bucket as read is full again after its own time to full, whatever scale it is kept
  // in (frac is below its rate): whole ms to its arrival time, rounded up.
  held: '(sa and sa >= now) and (sa - now + (sb > 0 and 1 or 0)) or 0',
  adjustLua: `  -- core/rules/token-bucket.ts, adjust(): the time queued ahead of now moves back by a refund, by the
  -- take's units not refilled yet (those left between now and refilled, at most -delta tokens),
  -- never below 0 (a bucket already full, or a take refilled already, gets nothing); or forward
  -- by a charge, the debt capped at one extra full refill as for a penalty. Divisions exact as
  -- in the decision; the state read under the take's tier and written in it, as there.
${READ_QUEUED}  local q = false
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
    if q > 2 * tolerance then q = 2 * tolerance end
    if q < queued then q = queued end
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
    const own: BucketTier = { limit, periodMs, burst };
    return {
      timed: false,
      spec: () => spec,
      windowOf: () => 0,
      tierOf(call: CallLimit | undefined): BucketTier | undefined {
        // A count is no tier (a token bucket ignores one), and the rule's own parameters decide
        // exactly as none: the call then sends nothing more.
        if (typeof call !== 'object') return undefined;
        if (call.limit === limit && call.periodMs === periodMs && call.burst === burst) return undefined;
        return call;
      },
      decision(reply): Decision {
        // A tier decides in its own numbers; a count is no tier (see tierOf).
        const tier = typeof reply.limit === 'object' ? reply.limit : own;
        return makeDecision({
          allowed: reply.allowed,
          name,
          limit: tier.limit,
          capacity: tier.burst,
          remaining: reply.remaining,
          cost: reply.cost,
          retryAfterMs: reply.retryAfterMs,
          resetMs: reply.resetMs,
          windowMs: tier.periodMs,
        });
      },
    };
  },
};
