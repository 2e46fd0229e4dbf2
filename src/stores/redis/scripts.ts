import { createHash } from 'node:crypto';

/**
 * The decision script: every decision of a batch in one call, each group atomic (the script
 * runs alone on the server), time from the server's `TIME` unless the caller passes its own.
 *
 * Layout (all strings; `KEYS`: one per entry, in order):
 * - `ARGV[1]`: empty for the server's clock (the script reads `TIME` once per call); otherwise
 *   the caller's clock decides, every group carries its `now`, and this is the extra TTL in ms
 *   added to every write (see docs/redis.md).
 * - `ARGV[2]`: on the server's clock, the call's deadline in ms of the server's clock: when the
 *   script starts later than that, it changes nothing and replies `[now, -4]`, because Node has
 *   answered these decisions already (with the failure policy) and must not find them charged
 *   later. Empty on the caller's clock (the script reads no `TIME` there).
 * - `ARGV[3]`: `S`, the number of rule parameters that follow (`ARGV[4 .. 3 + S]`): each rule of
 *   the call once, precomputed in Node, converted to numbers once per call:
 *   - token bucket `1, limit, periodMs, burst, penalty` (5 values);
 *   - calendar quota `2, penalty, limit, b0, b1, b2, b3` (7 values): the starts of yesterday,
 *     today, tomorrow and the day after as Node sees them; the script picks the day holding its
 *     `now` (Lua cannot read an IANA time zone database).
 * - then the groups, one after another. An entry is `ref, cost` (token bucket) or
 *   `ref, cost, limit` (quota; `limit` empty for the rule's own), where `ref` is the index in
 *   ARGV of its rule's first parameter.
 *   - a single take (a refusal may be charged when the rule has a penalty): `ref`, [`now`],
 *     then the rest of its entry;
 *   - a run of `c` single takes with one entry (one rule, cost, limit [and `now`]), for the next
 *     `c` keys: `0, c`, then the entry as for a single take. Concurrent takes mostly look alike,
 *     and every argument costs the client and Redis a little: a run of 32 sends 6 instead of 64;
 *   - an all-or-nothing take of `n` entries (charged only if every entry admits): `-n`, [`now`],
 *     then `n` entries.
 *   `now` (ms since the Unix epoch) is there only on the caller's clock.
 *
 * State, one string per key (constant size whatever the traffic):
 * - token bucket `"<ms>:<frac>"`: the GCRA arrival time as whole ms since the Unix epoch plus the
 *   sub-millisecond remainder in scaled units (`0 <= frac < limit`). The scaled arithmetic of
 *   `core/gcra.ts` only ever needs the arrival time relative to `now` (at most 2 × burst × period
 *   scaled units, checked to be a safe integer when the rule is made), so there is no epoch and
 *   no horizon after which numbers lose exactness.
 * - calendar quota `"<windowStartMs>:<count>:<windowEndMs>"` (a state without its end, written
 *   by an earlier version, still reads). The end is stored because a take whose clock lies in an
 *   earlier day than the stored one counts against the stored day (a quota never moves
 *   backwards), and Lua cannot compute that day's end: the days sent may not reach it.
 *
 * Reply: `[now, then per entry: retry, remaining, resetMs]`, and for a quota entry a fourth,
 * `windowMs` (the length of the day that counted: 23, 24 or 25 hours; a bucket's is its period,
 * known to Node). `retry` is the status too: 0 admitted; > 0 refused, retry after so many ms;
 * -1 refused for good (Infinity; Redis truncates Lua numbers to integers); -3 a group that was
 * not evaluated and changed nothing: the server's day lies outside the days Node sent (clock
 * skew over a day; Node retries with the server's time). A call that started after its deadline
 * replies `[now, -4]` alone and changes nothing. A key of another type or an unreadable
 * value reads as absent and is overwritten (a self-repair: the key is in the store's own prefix).
 *
 * Each key is read once per call (MGET) and written once at its end, however many decisions of
 * the batch touch it; peeks and refusals write nothing. Every write sets a TTL equal to the key's
 * time to full (bucket) or to reset (quota): an idle key vanishes exactly when forgetting it
 * changes nothing.
 *
 * The script is flat: no closures and no table per key built per call (the keys' states live in
 * one array), `redis.call` and library functions in locals, divisions by `%` instead of calls to
 * `math.floor`, every decision inline. Most of its time goes to Redis itself: `MGET`, and the
 * `SET … PX` that creates or updates each key (~1–3 µs each).
 */
/**
 * The server's clock in whole ms (`now`), from `TIME`, spliced into both scripts. No
 * redis.replicate_commands(): Redis >= 5 replicates a script's effects, not the script, so reading
 * TIME before writing is allowed.
 */
const SERVER_NOW = `local t = call('TIME')
local us = tonumber(t[2])
now = tonumber(t[1]) * 1000 + (us - us % 1000) / 1000
`;

/**
 * A key's state from its value `v` (MGET's: nil for an absent key or one of another type), spliced
 * into both scripts: `sa` (ms or day start; false when absent or unreadable), `sb` (fraction or
 * count) and `sc` (a quota's day end; false when not stored). What cannot be read is absent, and
 * the write that follows repairs it.
 */
const READ_STATE = `local sa, sb, sc = false, 0, false
if v then
  local c1 = find(v, ':', 1, true)
  if c1 then
    local c2 = find(v, ':', c1 + 1, true)
    sa = tonumber(sub(v, 1, c1 - 1))
    if c2 then
      sb = tonumber(sub(v, c1 + 1, c2 - 1))
      sc = tonumber(sub(v, c2 + 1))
      if not sc then sb = nil end
    else
      sb = tonumber(sub(v, c1 + 1))
    end
    if not (sa and sb) then sa, sb, sc = false, 0, false end
  end
end
`;

/**
 * The new value of a key: a quota's `"<start>:<count>:<end>"` (`nc` its day end) or a bucket's
 * `"<ms>:<frac>"` (`nc` false). Whole numbers as `%d`: every one is an integer below 2^53.
 */
const STATE_VALUE = `if nc then value = format('%d:%d:%d', na, nb, nc) else value = format('%d:%d', na, nb) end`;

/**
 * The token bucket's decision, core/gcra.ts's decide() in Lua, spliced into both scripts. Reads
 * the locals `now`, `cost`, `asked` (cost, or 1 for a peek), `sa`/`sb` (the key's state; `sa`
 * false when absent), `rate`, `unit`, `burst`, `penalty`, `single`; sets `retry`, `remaining`,
 * `reset` and, when the take charges, `na`/`nb`/`ttl` (the new state and its TTL).
 */
const TOKEN_DECISION = `  -- core/gcra.ts, decide(). Exact division of whole numbers held in doubles: % is
  -- a - floor(a / b) * b, and the quotient of a double division may round up across an
  -- integer, so the remainder is corrected into [0, b); (a - r) / b is then exact.
  local tolerance = burst * unit
  local queued = 0
  if sa and sa >= now then queued = (sa - now) * rate + sb end
  local after = queued + asked * unit
  if cost > 0 and after <= tolerance then
    -- Admitted and charged (after <= tolerance implies cost <= burst).
    local r = after % rate
    if r < 0 then r = r + rate elseif r >= rate then r = r - rate end
    local q = (after - r) / rate
    ttl = q
    if r > 0 then ttl = q + 1 end
    local d = tolerance - after
    local r2 = d % unit
    if r2 < 0 then r2 = r2 + unit elseif r2 >= unit then r2 = r2 - unit end
    remaining = (d - r2) / unit
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
`;

/**
 * The calendar quota's decision, core/quota.ts's decide() in Lua, spliced into both scripts.
 * Reads `now`, `cost`, `asked`, `sa`/`sb`/`sc`, `q` (the limit), `b0`..`b3` (day starts),
 * `penalty`, `single`; sets `retry` (-3 when no day sent holds `now`), `remaining`, `reset`,
 * `window` and, when the take charges, `na`/`nb`/`nc`/`ttl`.
 */
const QUOTA_DECISION = `  -- core/quota.ts, decide(): the local day holding now, among the four sent.
  local s, f
  if now >= b1 and now < b2 then
    s, f = b1, b2
  elseif now >= b0 and now < b1 then
    s, f = b0, b1
  elseif now >= b2 and now < b3 then
    s, f = b2, b3
  end
  remaining, reset, window = 0, 0, 0
  retry = -3
  if s then
    local used = 0
    if sa == s then
      used = sb
    elseif sa and sa > s then
      -- The clock stepped back (a caller's clock, or another node's a second behind across
      -- midnight) into a day before the stored one: the take counts against the stored day,
      -- which never moves backwards and never restarts. A state from before the day's end was
      -- stored ends where the day after it starts, among the days sent, or a day of today's
      -- length later.
      local e = sc
      if not e then
        if sa == b2 then e = b3 else e = sa + f - s end
      end
      s, f, used = sa, e, sb
    end
    reset = f - now
    window = f - s
    if used < q then remaining = q - used end
    if asked > q then
      retry = -1
    elseif asked <= remaining then
      retry = 0
      if cost > 0 then
        remaining = remaining - cost
        na, nb, nc, ttl = s, used + cost, f, reset
      end
    else
      retry = reset
      if single and penalty == 1 and cost > 0 then na, nb, nc, ttl = s, used + cost, f, reset end
    end
  end
`;

export const decisionScript = `
local call = redis.call
local tonumber = tonumber
local find = string.find
local sub = string.sub
local format = string.format
local argv = ARGV
local keys = KEYS
local slack = tonumber(argv[1])
local caller = slack ~= nil
local now = 0
if not caller then
  slack = 0
${SERVER_NOW}  -- Past its deadline Node has answered this call already: charging now would count
  -- decisions whose callers were told something else.
  local deadline = tonumber(argv[2])
  if deadline and now > deadline then return { now, -4 } end
end
-- Rule parameters as numbers, at their index in ARGV.
local a = 4 + tonumber(argv[3])
local P = {}
for x = 4, a - 1 do P[x] = tonumber(argv[x]) end

-- Every key is read once (MGET, in chunks; GET would fail on a key of another type) and gets a
-- slot in S, 5 values from S[base + 1]: the key, its state a (ms or day start; false when
-- absent), b (fraction or count), c (a quota's day end; false for a bucket) and the TTL to write
-- it with (false: unchanged). E[x] is the
-- base of KEYS[x]'s slot. A key of another type reads as absent (MGET returns nil for it), and
-- an unreadable value too: both are repaired by the write that follows.
local nkeys = #keys
local S = {}
local E = {}
local slots = {}
local u = 0
local i = 1
while i <= nkeys do
  local j = i + 999
  if j > nkeys then j = nkeys end
  local values = call('MGET', unpack(keys, i, j))
  for x = i, j do
    local key = keys[x]
    local e = slots[key]
    if not e then
      e = u
      u = u + 5
      slots[key] = e
      local v = values[x - i + 1]
${READ_STATE}      S[e + 1] = key
      S[e + 2] = sa
      S[e + 3] = sb
      S[e + 4] = sc
      S[e + 5] = false
    end
    E[x] = e
  end
  i = j + 1
end

local out = { 0 }
local o = 1
local k = 1
local total = #argv
-- An all-or-nothing group's new states and reply offsets (5 values per entry), applied when
-- every entry admits.
local W
while a <= total do
  local n = tonumber(argv[a])
  local single = n >= 0
  if n > 0 then
    n = 1
  elseif n == 0 then
    -- A run: the next argv[a + 1] keys, each a single take with this one entry.
    n = tonumber(argv[a + 1])
    a = a + 2
  else
    n = -n
    a = a + 1
    if not W then W = {} end
  end
  if caller then
    if single then now = tonumber(argv[a + 1]) else now = tonumber(argv[a]); a = a + 1 end
  end
  local admitted = true
  local failed = false
  local p, cost, limit
  for x = 1, n do
    -- A group's entries each have their own fields; a run's takes share the first's.
    if x == 1 or not single then
      p = tonumber(argv[a])
      if single and caller then cost = tonumber(argv[a + 2]); a = a + 3 else cost = tonumber(argv[a + 1]); a = a + 2 end
      if P[p] ~= 1 then limit = tonumber(argv[a]); a = a + 1 end
    end
    local e = E[k]
    k = k + 1
    local asked = cost
    if cost == 0 then asked = 1 end
    -- The new state (na false: none) and its TTL.
    local na, nc = false, false
    local nb, ttl
    local retry, remaining, reset
    if P[p] == 1 then
      local rate, unit, burst, penalty = P[p + 1], P[p + 2], P[p + 3], P[p + 4]
      local sa, sb = S[e + 2], S[e + 3]
${TOKEN_DECISION}      out[o + 1] = retry
      out[o + 2] = remaining
      out[o + 3] = reset
    else
      local q = limit or P[p + 2]
      local penalty, b0, b1, b2, b3 = P[p + 1], P[p + 3], P[p + 4], P[p + 5], P[p + 6]
      local sa, sb, sc = S[e + 2], S[e + 3], S[e + 4]
      local window
${QUOTA_DECISION}      if retry == -3 then failed = true end
      out[o + 4] = window
      out[o + 1] = retry
      out[o + 2] = remaining
      out[o + 3] = reset
    end
    if single then
      if na then
        S[e + 2] = na
        S[e + 3] = nb
        S[e + 4] = nc
        S[e + 5] = ttl
      end
    else
      local w = 5 * x
      W[w - 4] = na
      W[w - 3] = nb
      W[w - 2] = nc
      W[w - 1] = ttl
      W[w] = o
    end
    if retry ~= 0 then admitted = false end
    if P[p] == 1 then o = o + 3 else o = o + 4 end
  end
  if not single then
    if failed then
      -- Not evaluated: the server's day lies outside the days sent; nothing changes.
      for x = 1, n do out[W[5 * x] + 1] = -3 end
    elseif admitted then
      for x = 1, n do
        local w = 5 * x
        if W[w - 4] then
          local e = E[k - n + x - 1]
          S[e + 2] = W[w - 4]
          S[e + 3] = W[w - 3]
          S[e + 4] = W[w - 2]
          S[e + 5] = W[w - 1]
        end
      end
    end
  end
end
out[1] = now
for e = 0, u - 5, 5 do
  local ttl = S[e + 5]
  -- The TTL as a string: Redis 7.0 converts a Lua number argument more slowly than format does
  -- (~0.2 µs of a write's ~1.5).
  if ttl then
    local na, nb, nc = S[e + 2], S[e + 3], S[e + 4]
    local value
    ${STATE_VALUE}
    call('SET', S[e + 1], value, 'PX', format('%d', ttl + slack))
  end
end
return out
`;

/**
 * The script of a batch that holds one single take, the usual case below saturation: the same
 * decision as {@link decisionScript} (the same Lua, spliced from one source) and the same reply,
 * without the batch's bookkeeping (rule table, key slots, groups). It costs Redis about half as
 * much: what a lone decision waits for is this script and the round trip.
 *
 * ARGV: `cost`, the rule's parameters (`1, limit, periodMs, burst, penalty` or `2, penalty, limit,
 * b0, b1, b2, b3`), for a quota the call's `limit` (empty for the rule's own), then on the server's
 * clock one more, the deadline (see {@link decisionScript}; `[now, -4]` past it), and on the
 * caller's clock two, `slack` and `now`. Few arguments: each costs Redis and the client a little
 * on every call. One key.
 */
export const singleDecisionScript = `
local call = redis.call
local find = string.find
local sub = string.sub
local format = string.format
local argv = ARGV
local key = KEYS[1]
local token = argv[2] == '1'
-- The clock's arguments come last, after the token's 6 or the quota's 9: the caller's slack and
-- now, or the server's deadline alone.
local clock = 10
if token then clock = 7 end
local slack, now
if #argv > clock then
  slack = tonumber(argv[clock])
  now = tonumber(argv[clock + 1])
else
  slack = 0
${SERVER_NOW}  local deadline = tonumber(argv[clock])
  if deadline and now > deadline then return { now, -4 } end
end
-- MGET, not GET: a key of another type reads as absent instead of failing.
local v = call('MGET', key)[1]
${READ_STATE}local cost = tonumber(argv[1])
local asked = cost
if cost == 0 then asked = 1 end
local single = true
local na, nc = false, false
local nb, ttl
local retry, remaining, reset
local out
if token then
  local rate, unit, burst, penalty = tonumber(argv[3]), tonumber(argv[4]), tonumber(argv[5]), tonumber(argv[6])
${TOKEN_DECISION}  out = { now, retry, remaining, reset }
else
  local penalty = tonumber(argv[3])
  local q = tonumber(argv[9]) or tonumber(argv[4])
  local b0, b1, b2, b3 = tonumber(argv[5]), tonumber(argv[6]), tonumber(argv[7]), tonumber(argv[8])
  local window
${QUOTA_DECISION}  out = { now, retry, remaining, reset, window }
end
if na then
  local value
  ${STATE_VALUE}
  call('SET', key, value, 'PX', format('%d', ttl + slack))
end
return out
`;

/** SHA1 of {@link decisionScript}, computed here so that EVALSHA needs no SCRIPT LOAD first. */
export const decisionScriptSha: string = createHash('sha1').update(decisionScript).digest('hex');

/** SHA1 of {@link singleDecisionScript}. */
export const singleDecisionScriptSha: string = createHash('sha1').update(singleDecisionScript).digest('hex');
