import { createHash } from 'node:crypto';

/**
 * The decision script: every decision of a batch in one call, each group atomic (the script
 * runs alone on the server), time from the server's `TIME` unless the caller passes its own.
 *
 * Layout (all strings; `KEYS`: one per entry, in order):
 * - `ARGV[1]`: empty for the server's clock (the script reads `TIME` once per call); otherwise
 *   the caller's clock decides, every group carries its `now`, and this is the extra TTL in ms
 *   added to every write (see docs/redis.md).
 * - `ARGV[2]`: `S`, the number of rule parameters that follow (`ARGV[3 .. 2 + S]`): each rule of
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
 *   - an all-or-nothing take of `n` entries (charged only if every entry admits): `-n`, [`now`],
 *     then `n` entries.
 *   `now` (ms since the Unix epoch) is there only on the caller's clock.
 *
 * State, one string per key (A1: O(1)):
 * - token bucket `"<ms>:<frac>"`: the GCRA arrival time as whole ms since the Unix epoch plus the
 *   sub-millisecond remainder in scaled units (`0 <= frac < limit`). The scaled arithmetic of
 *   `core/gcra.ts` only ever needs the arrival time relative to `now` (at most 2 × burst × period
 *   scaled units, checked to be a safe integer when the rule is made), so there is no epoch and
 *   no horizon after which numbers lose exactness.
 * - calendar quota `"<windowStartMs>:<count>"`.
 *
 * Reply: `[now, then per entry: retry, remaining, resetMs]`, and for a quota entry a fourth,
 * `windowMs` (the length of the day that counted: 23, 24 or 25 hours; a bucket's is its period,
 * known to Node). `retry` is the status too: 0 admitted; > 0 refused, retry after so many ms;
 * -1 refused for good (Infinity; Redis truncates Lua numbers to integers); -3 a group that was
 * not evaluated and changed nothing: the server's day lies outside the days Node sent (clock
 * skew over a day; Node retries with the server's time). A key of another type or an unreadable
 * value reads as absent and is overwritten (a self-repair: the key is in the store's own prefix).
 *
 * Each key is read once per call (MGET) and written once at its end, however many decisions of
 * the batch touch it; peeks and refusals write nothing. Every write sets a TTL equal to the key's
 * time to full (bucket) or to reset (quota): an idle key vanishes exactly when forgetting it
 * changes nothing.
 *
 * The script is flat (no closures or tables of tables built per call; `redis.call` and library
 * functions in locals) and decides inline: its own work is a few µs per call plus well under a
 * µs per decision, next to the ~2–3 µs of the `SET … PX` that creates or updates each key.
 */
export const decisionScript = `
local call = redis.call
local tonumber = tonumber
local floor = math.floor
local find = string.find
local sub = string.sub
local format = string.format
local argv = ARGV
local keys = KEYS
local slack = tonumber(argv[1])
local caller = slack ~= nil
if not caller then slack = 0 end
-- Rule parameters as numbers, at their index in ARGV.
local a = 3 + tonumber(argv[2])
local P = {}
for x = 3, a - 1 do P[x] = tonumber(argv[x]) end

-- Every key is read once (MGET, in chunks; GET would fail on a key of another type). The state of key is held parsed
-- in sa[key] (ms or day start; false: absent) and sb[key] (fraction or count). A key of another
-- type reads as absent (MGET returns nil for it), and an unreadable value too: both are
-- repaired by the write that follows.
local nkeys = #keys
local sa = {}
local sb = {}
local i = 1
while i <= nkeys do
  local j = i + 999
  if j > nkeys then j = nkeys end
  local values = call('MGET', unpack(keys, i, j))
  for x = i, j do
    local key = keys[x]
    if sa[key] == nil then
      local v = values[x - i + 1]
      local ta, tb = false, 0
      if v then
        local c = find(v, ':', 1, true)
        if c then
          ta = tonumber(sub(v, 1, c - 1))
          tb = tonumber(sub(v, c + 1))
          if not (ta and tb) then ta = false end
        end
      end
      sa[key] = ta
      sb[key] = tb
    end
  end
  i = j + 1
end

-- Keys written, in order, with their TTL: written once each at the end.
local ttls = {}
local dirty = {}
local nd = 0
local out = { 0 }
local o = 1
local k = 1
local total = #argv
local now = 0
local serverNow = nil
-- An all-or-nothing group's new states, reply offsets and TTLs, applied when all admit.
local wa, wb, wt, wo = {}, {}, {}, {}
while a <= total do
  local n = tonumber(argv[a])
  local single = n > 0
  if single then n = 1 else n = -n; a = a + 1 end
  if caller then
    if single then now = tonumber(argv[a + 1]) else now = tonumber(argv[a]); a = a + 1 end
  elseif not serverNow then
    -- No redis.replicate_commands(): Redis >= 5 replicates a script's effects, not the script,
    -- so reading TIME before writing is allowed.
    local t = call('TIME')
    serverNow = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
    now = serverNow
  end
  local admitted = true
  local failed = false
  for x = 1, n do
    local p = tonumber(argv[a])
    local cost
    if single and caller then cost = tonumber(argv[a + 2]); a = a + 3 else cost = tonumber(argv[a + 1]); a = a + 2 end
    local key = keys[k]
    k = k + 1
    wo[x] = o
    local asked = cost
    if cost == 0 then asked = 1 end
    local na = false
    local nb, ttl
    if P[p] == 1 then
      -- core/gcra.ts, decide(). Exact floor division of whole numbers held in doubles: the
      -- quotient of a double division may round up across an integer; the remainder tells, and
      -- corrects it.
      local rate, unit, burst = P[p + 1], P[p + 2], P[p + 3]
      local tolerance = burst * unit
      local queued = 0
      local sta = sa[key]
      if sta and sta >= now then queued = (sta - now) * rate + sb[key] end
      local after = queued + asked * unit
      local remaining = 0
      if queued < tolerance then
        local d = tolerance - queued
        remaining = floor(d / unit)
        local r = d - remaining * unit
        if r < 0 then remaining = remaining - 1 elseif r >= unit then remaining = remaining + 1 end
      end
      local retry, reset
      if asked <= burst and after <= tolerance and cost > 0 then
        local q = floor(after / rate)
        local r = after - q * rate
        if r < 0 then q = q - 1; r = r + rate elseif r >= rate then q = q + 1; r = r - rate end
        ttl = q
        if r > 0 then ttl = q + 1 end
        local d = tolerance - after
        remaining = floor(d / unit)
        local r2 = d - remaining * unit
        if r2 < 0 then remaining = remaining - 1 elseif r2 >= unit then remaining = remaining + 1 end
        retry = 0
        reset = ttl
        na = now + q
        nb = r
      else
        local q = floor(queued / rate)
        local r = queued - q * rate
        if r < 0 then q = q - 1; r = r + rate elseif r >= rate then q = q + 1; r = r - rate end
        reset = q
        if r > 0 then reset = q + 1 end
        if asked > burst then
          retry = -1
        elseif after <= tolerance then
          retry = 0
        else
          local e = after - tolerance
          q = floor(e / rate)
          r = e - q * rate
          if r < 0 then q = q - 1; r = r + rate elseif r >= rate then q = q + 1; r = r - rate end
          retry = q
          if r > 0 then retry = q + 1 end
          if single and P[p + 4] == 1 and cost > 0 then
            -- Debt is capped at one extra full refill (core/gcra.ts).
            local charged = after
            if charged > 2 * tolerance then charged = 2 * tolerance end
            q = floor(charged / rate)
            r = charged - q * rate
            if r < 0 then q = q - 1; r = r + rate elseif r >= rate then q = q + 1; r = r - rate end
            ttl = q
            if r > 0 then ttl = q + 1 end
            na = now + q
            nb = r
          end
        end
      end
      out[o + 1] = retry
      out[o + 2] = remaining
      out[o + 3] = reset
      o = o + 3
      if retry ~= 0 then admitted = false end
    else
      -- core/quota.ts, decide()
      local limit = tonumber(argv[a])
      a = a + 1
      local q = limit or P[p + 2]
      local s, e
      local b1, b2 = P[p + 4], P[p + 5]
      if now >= b1 and now < b2 then
        s, e = b1, b2
      elseif now >= P[p + 3] and now < b1 then
        s, e = P[p + 3], b1
      elseif now >= b2 and now < P[p + 6] then
        s, e = b2, P[p + 6]
      end
      local retry, left, reset = -3, 0, 0
      if s then
        local used = 0
        if sa[key] == s then used = sb[key] end
        reset = e - now
        if used < q then left = q - used end
        if asked > q then
          retry = -1
        elseif asked <= left then
          retry = 0
          if cost > 0 then
            left = left - cost
            na, nb, ttl = s, used + cost, reset
          end
        else
          retry = reset
          if single and P[p + 1] == 1 and cost > 0 then na, nb, ttl = s, used + cost, reset end
        end
      else
        failed = true
      end
      out[o + 1] = retry
      out[o + 2] = left
      out[o + 3] = reset
      out[o + 4] = e and e - s or 0
      o = o + 4
      if retry ~= 0 then admitted = false end
    end
    if single then
      if na then
        sa[key] = na
        sb[key] = nb
        if not ttls[key] then nd = nd + 1; dirty[nd] = key end
        ttls[key] = ttl
      end
    else
      wa[x] = na
      wb[x] = nb
      wt[x] = ttl
    end
  end
  if not single then
    if failed then
      -- Not evaluated: the server's day lies outside the days sent; nothing changes.
      for x = 1, n do out[wo[x] + 1] = -3 end
    elseif admitted then
      for x = 1, n do
        if wa[x] then
          local key = keys[k - n + x - 1]
          sa[key] = wa[x]
          sb[key] = wb[x]
          if not ttls[key] then nd = nd + 1; dirty[nd] = key end
          ttls[key] = wt[x]
        end
      end
    end
  end
end
out[1] = now
for x = 1, nd do
  local key = dirty[x]
  call('SET', key, format('%d:%d', sa[key], sb[key]), 'PX', ttls[key] + slack)
end
return out
`;

/** SHA1 of {@link decisionScript}, computed here so that EVALSHA needs no SCRIPT LOAD first. */
export const decisionScriptSha: string = createHash('sha1').update(decisionScript).digest('hex');
