import { createHash } from 'node:crypto';

/**
 * The decision script: every decision of a batch in one call, each group atomic (the script
 * runs alone on the server), time from the server's `TIME` unless the caller passes its own.
 *
 * Layout (all strings):
 * - `ARGV[1]`: extra TTL in ms added to every write (0 on the server's clock; see docs/redis.md).
 * - then one group after another: `n`, `now`, then `n` × (`spec`, `cost`, `limit`).
 *   `n = 0` is a single take (one entry, a refusal may be charged when the rule has a penalty);
 *   `n >= 1` is an all-or-nothing take of `n` entries (charged only if every entry admits).
 *   `now` is ms since the Unix epoch, or empty for the server's clock.
 * - `KEYS`: one per entry, in order.
 *
 * Specs are precomputed per rule in Node (no per-request formatting):
 * - token bucket `"1 <limit> <periodMs> <burst> <penalty>"`;
 * - calendar quota `"2 <penalty> <limit> <b0> <b1> <b2> <b3>"`: the starts of yesterday, today,
 *   tomorrow and the day after as Node sees them; the script picks the day holding its `now`
 *   (Lua cannot read an IANA time zone database).
 *
 * State, one string per key (A1: O(1)):
 * - token bucket `"<ms>:<frac>"`: the GCRA arrival time as whole ms since the Unix epoch plus the
 *   sub-millisecond remainder in scaled units (`0 <= frac < limit`). The scaled arithmetic of
 *   `core/gcra.ts` only ever needs the arrival time relative to `now` (at most 2 × burst × period
 *   scaled units, checked to be a safe integer when the rule is made), so there is no epoch and
 *   no horizon after which numbers lose exactness.
 * - calendar quota `"<windowStartMs>:<count>"`.
 *
 * Reply: `[now, then 5 integers per entry: status, remaining, retryAfterMs, resetMs, windowMs]`
 * (windowMs: the period, or the length of the day that counted: 23, 24 or 25 hours). Status 1
 * admitted, 0 refused; `retryAfterMs = -1` stands for Infinity (Redis truncates Lua numbers to
 * integers). Negative statuses mark a group that was not evaluated and changed nothing:
 * -1 a key of another type, -2 an unreadable value, -3 the server's day lies outside the windows
 * Node sent (clock skew over a day; Node retries with the server's time).
 *
 * Every write sets a TTL equal to the key's time to full (bucket) or to reset (quota): an idle
 * key vanishes exactly when forgetting it changes nothing.
 */
export const decisionScript = `
local slack = tonumber(ARGV[1])
local serverNow = nil
local now = 0
local specs = {}

local function spec(s)
  local p = specs[s]
  if p then return p end
  p = {}
  for n in string.gmatch(s, '[^ ]+') do p[#p + 1] = tonumber(n) end
  specs[s] = p
  return p
end

-- Exact floor division of whole numbers held in doubles: the quotient of a double division may
-- round up across an integer; the remainder tells, and corrects it.
local function divmod(a, b)
  local q = math.floor(a / b)
  local r = a - q * b
  if r < 0 then
    q = q - 1
    r = r + b
  elseif r >= b then
    q = q + 1
    r = r - b
  end
  return q, r
end

local function ceildiv(a, b)
  local q, r = divmod(a, b)
  if r > 0 then return q + 1 end
  return q
end

local function read(key)
  local v = redis.pcall('GET', key)
  if type(v) == 'table' then return nil, nil, -1 end
  if not v then return nil, nil, 0 end
  local a, b = string.match(v, '^(%-?%d+):(%d+)$')
  if not a then return nil, nil, -2 end
  return tonumber(a), tonumber(b), 0
end

-- core/gcra.ts, decide(): returns status, remaining, retry, reset, window[, value, ttl]
local function bucket(key, p, cost, commit)
  local tatMs, frac, err = read(key)
  if err < 0 then return err end
  local rate, unit, burst, penalty = p[2], p[3], p[4], p[5]
  local tolerance = burst * unit
  local queued = 0
  if tatMs and tatMs >= now then queued = (tatMs - now) * rate + frac end
  local asked = cost
  if cost == 0 then asked = 1 end
  local after = queued + asked * unit
  local remaining = 0
  if queued < tolerance then remaining = divmod(tolerance - queued, unit) end
  if asked > burst then return 0, remaining, -1, ceildiv(queued, rate), unit end
  if after <= tolerance then
    if cost == 0 then return 1, remaining, 0, ceildiv(queued, rate), unit end
    local q, r = divmod(after, rate)
    local ttl = q
    if r > 0 then ttl = q + 1 end
    return 1, divmod(tolerance - after, unit), 0, ttl, unit, string.format('%d:%d', now + q, r), ttl
  end
  local retry = ceildiv(after - tolerance, rate)
  local reset = ceildiv(queued, rate)
  if commit and penalty == 1 and cost > 0 then
    -- Debt is capped at one extra full refill (core/gcra.ts).
    local charged = after
    if charged > 2 * tolerance then charged = 2 * tolerance end
    local q, r = divmod(charged, rate)
    local ttl = q
    if r > 0 then ttl = q + 1 end
    return 0, remaining, retry, reset, unit, string.format('%d:%d', now + q, r), ttl
  end
  return 0, remaining, retry, reset, unit
end

-- core/quota.ts, decide()
local function quota(key, p, cost, limit, commit)
  local penalty, b0, b1, b2, b3 = p[2], p[4], p[5], p[6], p[7]
  local q = limit or p[3]
  local s, e
  if now >= b1 and now < b2 then
    s, e = b1, b2
  elseif now >= b0 and now < b1 then
    s, e = b0, b1
  elseif now >= b2 and now < b3 then
    s, e = b2, b3
  else
    return -3
  end
  local start, count, err = read(key)
  if err < 0 then return err end
  local used = 0
  if start == s then used = count end
  local reset = e - now
  local window = e - s
  local asked = cost
  if cost == 0 then asked = 1 end
  local left = 0
  if used < q then left = q - used end
  if asked > q then return 0, left, -1, reset, window end
  if asked <= left then
    if cost == 0 then return 1, left, 0, reset, window end
    return 1, left - cost, 0, reset, window, string.format('%d:%d', s, used + cost), reset
  end
  if commit and penalty == 1 and cost > 0 then
    return 0, left, reset, reset, window, string.format('%d:%d', s, used + cost), reset
  end
  return 0, left, reset, reset, window
end

local function decide(key, s, cost, limit, commit)
  local p = spec(s)
  if p[1] == 1 then return bucket(key, p, cost, commit) end
  return quota(key, p, cost, limit, commit)
end

local out = {}
local k = 1
local a = 2
local total = #ARGV
while a <= total do
  local n = tonumber(ARGV[a])
  now = tonumber(ARGV[a + 1])
  if not now then
    if not serverNow then
      if redis.replicate_commands then redis.replicate_commands() end
      local t = redis.call('TIME')
      serverNow = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    now = serverNow
  end
  out[1] = now
  a = a + 2
  if n == 0 then
    local st, rem, retry, reset, window, value, ttl = decide(KEYS[k], ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), true)
    if value then redis.call('SET', KEYS[k], value, 'PX', ttl + slack) end
    local o = #out
    out[o + 1] = st
    out[o + 2] = rem or 0
    out[o + 3] = retry or 0
    out[o + 4] = reset or 0
    out[o + 5] = window or 0
    k = k + 1
    a = a + 3
  else
    local res = {}
    local failed = 0
    local admitted = true
    for i = 1, n do
      local st, rem, retry, reset, window, value, ttl = decide(KEYS[k + i - 1], ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), false)
      res[i] = { st, rem or 0, retry or 0, reset or 0, window or 0, value, ttl }
      if st < 0 then failed = st elseif st == 0 then admitted = false end
      a = a + 3
    end
    for i = 1, n do
      local r = res[i]
      if failed < 0 then
        r[1] = failed
      elseif admitted and r[6] then
        redis.call('SET', KEYS[k + i - 1], r[6], 'PX', r[7] + slack)
      end
      local o = #out
      out[o + 1] = r[1]
      out[o + 2] = r[2]
      out[o + 3] = r[3]
      out[o + 4] = r[4]
      out[o + 5] = r[5]
    end
    k = k + n
  end
end
return out
`;

/** SHA1 of {@link decisionScript}, computed here so that EVALSHA needs no SCRIPT LOAD first. */
export const decisionScriptSha: string = createHash('sha1').update(decisionScript).digest('hex');
