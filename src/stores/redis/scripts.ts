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
 * integers). Status -3 marks a group that was not evaluated and changed nothing: the server's
 * day lies outside the days Node sent (clock skew over a day; Node retries with the server's
 * time). A key of another type or an unreadable value reads as absent and is overwritten (a
 * self-repair: the key is in the store's own prefix).
 *
 * Each key is read once per call (MGET) and written once at its end, however many decisions of
 * the batch touch it. Every write sets a TTL equal to the key's time to full (bucket) or to reset
 * (quota): an idle key vanishes exactly when forgetting it changes nothing.
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

-- Every key is read once (MGET, in chunks) and written once at the end: a batch that decides a
-- hot key 256 times costs one read and one write. The state of each key is held parsed:
-- states[key] = { a, b } or false (absent). A key of another type reads as absent (MGET returns
-- nil for it) and an unreadable value too: both are repaired by the write that follows.
local states = {}
local unique = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  if states[key] == nil then
    states[key] = false
    unique[#unique + 1] = key
  end
end
local i = 1
while i <= #unique do
  local j = i + 199
  if j > #unique then j = #unique end
  local values = redis.call('MGET', unpack(unique, i, j))
  for x = i, j do
    local v = values[x - i + 1]
    if v then
      local a, b = string.match(v, '^(%-?%d+):(%d+)$')
      if a then states[unique[x]] = { tonumber(a), tonumber(b) } end
    end
  end
  i = j + 1
end
local dirty = {}
local ttls = {}

local function store(key, a, b, ttl)
  local s = states[key]
  if s then
    s[1] = a
    s[2] = b
  else
    states[key] = { a, b }
  end
  if not ttls[key] then dirty[#dirty + 1] = key end
  ttls[key] = ttl
end

-- core/gcra.ts, decide(): status, remaining, retry, reset, window[, a, b, ttl] where a:b is the
-- new state to write.
local function bucket(key, p, cost, commit)
  local state = states[key]
  local rate, unit, burst, penalty = p[2], p[3], p[4], p[5]
  local tolerance = burst * unit
  local queued = 0
  if state and state[1] >= now then queued = (state[1] - now) * rate + state[2] end
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
    return 1, divmod(tolerance - after, unit), 0, ttl, unit, now + q, r, ttl
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
    return 0, remaining, retry, reset, unit, now + q, r, ttl
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
  local state = states[key]
  local used = 0
  if state and state[1] == s then used = state[2] end
  local reset = e - now
  local window = e - s
  local asked = cost
  if cost == 0 then asked = 1 end
  local left = 0
  if used < q then left = q - used end
  if asked > q then return 0, left, -1, reset, window end
  if asked <= left then
    if cost == 0 then return 1, left, 0, reset, window end
    return 1, left - cost, 0, reset, window, s, used + cost, reset
  end
  if commit and penalty == 1 and cost > 0 then
    return 0, left, reset, reset, window, s, used + cost, reset
  end
  return 0, left, reset, reset, window
end

local function decide(key, s, cost, limit, commit)
  local p = spec(s)
  if p[1] == 1 then return bucket(key, p, cost, commit) end
  return quota(key, p, cost, limit, commit)
end

local out = {}
local o = 1
local k = 1
local a = 2
local total = #ARGV
while a <= total do
  local n = tonumber(ARGV[a])
  now = tonumber(ARGV[a + 1])
  if not now then
    if not serverNow then
      -- No redis.replicate_commands(): Redis >= 5 replicates a script's effects, not the script,
      -- so reading TIME before writing is allowed (and the call costs ~9 µs on Redis 7).
      local t = redis.call('TIME')
      serverNow = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    now = serverNow
  end
  out[1] = now
  a = a + 2
  if n == 0 then
    local key = KEYS[k]
    local st, rem, retry, reset, window, sa, sb, ttl = decide(key, ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), true)
    if sa then store(key, sa, sb, ttl) end
    out[o + 1] = st
    out[o + 2] = rem or 0
    out[o + 3] = retry or 0
    out[o + 4] = reset or 0
    out[o + 5] = window or 0
    o = o + 5
    k = k + 1
    a = a + 3
  else
    local res = {}
    local failed = 0
    local admitted = true
    for x = 1, n do
      local st, rem, retry, reset, window, sa, sb, ttl = decide(KEYS[k + x - 1], ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), false)
      res[x] = { st, rem or 0, retry or 0, reset or 0, window or 0, sa, sb, ttl }
      if st < 0 then failed = st elseif st == 0 then admitted = false end
      a = a + 3
    end
    for x = 1, n do
      local r = res[x]
      if failed < 0 then
        r[1] = failed
      elseif admitted and r[6] then
        store(KEYS[k + x - 1], r[6], r[7], r[8])
      end
      out[o + 1] = r[1]
      out[o + 2] = r[2]
      out[o + 3] = r[3]
      out[o + 4] = r[4]
      out[o + 5] = r[5]
      o = o + 5
    end
    k = k + n
  end
end
for x = 1, #dirty do
  local key = dirty[x]
  local s = states[key]
  redis.call('SET', key, string.format('%d:%d', s[1], s[2]), 'PX', ttls[key] + slack)
end
return out
`;

/** SHA1 of {@link decisionScript}, computed here so that EVALSHA needs no SCRIPT LOAD first. */
export const decisionScriptSha: string = createHash('sha1').update(decisionScript).digest('hex');
