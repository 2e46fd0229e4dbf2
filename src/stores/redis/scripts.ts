import { createHash } from 'node:crypto';
import { MAX_PENALTY_COUNT } from '../../core/bounds.js';
import { redisAlgorithms, type RedisAlgorithm } from './algorithms/index.js';
import { lockoutLua } from './lockout.js';
import { READ_MARKED, READ_STATE, STATE_VALUE, appendBlock } from './state-value.js';

/*
 * The two decision scripts and the adjustment script, assembled from the algorithm modules
 * (algorithms/): this file holds what every algorithm shares (reading the time, reading and
 * writing a key's state, batching, all-or-nothing groups, the reply) and splices each module's
 * decision or adjustment into a dispatch on the algorithm's tag. A module's Lua contract is in
 * algorithms/algorithm.ts.
 */

/**
 * The server's clock in whole ms (`now`), from `TIME`, spliced into both scripts. No
 * redis.replicate_commands(): Redis >= 5 replicates a script's effects, not the script, so reading
 * TIME before writing is allowed.
 */
export const SERVER_NOW = `local t = call('TIME')
local us = tonumber(t[2])
now = tonumber(t[1]) * 1000 + (us - us % 1000) / 1000
`;

/**
 * The clock of a script of one key, from its last arguments, at `clock`: on the app's clock
 * `slack` and `now`; on the server's clock the call's deadline alone, `now` from `TIME`, and past
 * the deadline the script returns `[now, -4]` having changed nothing (see
 * {@link decisionScript}).
 */
export const ONE_KEY_CLOCK = `local slack, now
if #argv > clock then
  slack = tonumber(argv[clock])
  now = tonumber(argv[clock + 1])
else
  slack = 0
${SERVER_NOW}  local deadline = tonumber(argv[clock])
  if deadline and now > deadline then return { now, -4 } end
end
`;

/**
 * A one-key script's per-call tier (see `RedisAlgorithm.tiers`): when present, its three values
 * (rate, period in ms, burst) come right before the clock's arguments, at `clock`, which then
 * moves past them. Its presence is read from the number of arguments (one or two for the clock
 * alone, four or five with a tier): a call without a tier sends nothing more.
 */
export const ONE_KEY_TIER = `local tr, tu, tb = false, false, false
if #argv > clock + 1 then
  tr, tu, tb = tonumber(argv[clock]), tonumber(argv[clock + 1]), tonumber(argv[clock + 2])
  clock = clock + 3
end
`;

/**
 * Library functions as locals, the penalty bound, the reader of a value with a block, and every
 * module's own functions.
 */
export const PRELUDE = `local call = redis.call
local tonumber = tonumber
local find = string.find
local sub = string.sub
local format = string.format
local floor = math.floor
local ceil = math.ceil
local MAX_PENALTY = ${MAX_PENALTY_COUNT}
${READ_MARKED}${redisAlgorithms.map((algorithm) => algorithm.luaFunctions ?? '').join('')}`;

/** A Lua table literal of one number per algorithm, indexed by tag. */
export function perTag(value: (algorithm: RedisAlgorithm) => number): string {
  return `{ ${redisAlgorithms.map(value).join(', ')} }`;
}

/**
 * The dispatch on `tag`: each algorithm's parameters bound to their names (`param(i)` is the Lua
 * expression of the i-th, from 0), then the algorithm's `body`.
 */
export function dispatch(
  param: (algorithm: RedisAlgorithm, i: number) => string,
  body: (algorithm: RedisAlgorithm) => string,
): string {
  const branches = redisAlgorithms.map((algorithm, i) => {
    const names = algorithm.params;
    const bind =
      names.length === 0
        ? ''
        : `  local ${names.join(', ')} = ${names.map((_, j) => param(algorithm, j)).join(', ')}\n`;
    return `${i === 0 ? 'if' : 'elseif'} tag == ${i + 1} then\n${bind}${body(algorithm)}`;
  });
  return `${branches.join('')}end\n`;
}

/**
 * A decision's body in the dispatch: its per-call limit when the algorithm takes one
 * (`limitAt`, or nothing when the caller has set `limit`), its decision, and under a lockout
 * (`lock`) what it reports in `held` for the lockout (see lockout.ts).
 */
function decisionBody(limitAt: string): (algorithm: RedisAlgorithm) => string {
  return (algorithm) =>
    `${algorithm.callLimit ? limitAt : ''}${algorithm.lua}  if lock then held = ${algorithm.held} end\n`;
}

/** Indents every line of `lua` by `spaces`. */
export function indent(lua: string, spaces: number): string {
  const pad = ' '.repeat(spaces);
  return lua
    .split('\n')
    .map((line) => (line.length === 0 ? line : pad + line))
    .join('\n');
}

/**
 * The decision script: every decision of a batch in one call, each group atomic (the script runs
 * alone on the server), time from the server's `TIME` unless the caller passes its own.
 *
 * Layout (all strings; `KEYS`: one per entry, in order):
 * - `ARGV[1]`: empty for the server's clock (the script reads `TIME` once per call); otherwise
 *   the app's clock decides, every group carries its `now`, and this is the extra TTL in ms
 *   added to every write (see docs/redis.md).
 * - `ARGV[2]`: on the server's clock, the call's deadline in ms of the server's clock: when the
 *   script starts later than that, it changes nothing and replies `[now, -4]`, because Node has
 *   answered these decisions already (with the failure policy) and must not find them charged
 *   later. Empty on the app's clock (the script reads no `TIME` there).
 * - `ARGV[3]`: `S`, the number of rule values that follow (`ARGV[4 .. 3 + S]`): each rule of the
 *   call once, its spec (the algorithm's tag, then its parameters: see each module in
 *   algorithms/; for a rule with a lockout the tag negated, and the lockout's four values after
 *   the parameters: see lockout.ts), converted to numbers once per call.
 * - then the groups, one after another. An entry is `ref, cost` and, for an algorithm that takes
 *   a per-call limit, `limit` (empty for the rule's own), where `ref` is the index in ARGV of its
 *   rule's spec. An entry with a per-call tier (see `RedisAlgorithm.tiers`) sends its cost as
 *   `-1 - cost` and the tier's rate, period and burst after the rest of its entry; an entry
 *   without one sends nothing more.
 *   - a single take (a refusal may be charged when the rule has a penalty): `ref`, [`now`],
 *     then the rest of its entry;
 *   - a run of `c` single takes with one entry (one rule, cost, limit [and `now`]), for the next
 *     `c` keys: `0, c`, then the entry as for a single take. Concurrent takes mostly look alike,
 *     and every argument costs the client and Redis a little: a run of 32 sends 6 instead of 64;
 *   - an all-or-nothing take of `n` entries (charged only if every entry admits): `-n`, [`now`],
 *     then `n` entries.
 *   `now` (ms since the Unix epoch) is there only on the app's clock.
 *
 * Reply: `[now, then per entry: retry, remaining, resetMs]`, and a fourth, `windowMs`, for an
 * algorithm whose window varies (a calendar period). `retry` is the status too: 0 admitted; > 0
 * refused, retry after so many ms; -1 refused for good (Infinity; Redis truncates Lua numbers to
 * integers); -3 a group that was not evaluated and changed nothing (a calendar's period bounds
 * sent by Node do not hold the server's time: Node retries with the server's time). A call that
 * started after its deadline replies `[now, -4]` alone and changes nothing. A key of another
 * type or an unreadable value reads as absent and is overwritten (a self-repair: the key is in
 * the store's own prefix).
 *
 * Each key is read once per call (MGET) and written once at its end, however many decisions of
 * the batch touch it; peeks and refusals write nothing (but a refusal that starts a lockout's
 * block). Every write sets a TTL equal to the time after which forgetting the key changes no
 * decision (the rule's horizon, the block's memory included): an idle key vanishes exactly then.
 *
 * The script is flat: no closures and no table per key built per call (the keys' states live in
 * one array), `redis.call` and library functions in locals, every decision inline. Most of its
 * time goes to Redis itself: `MGET`, and the `SET … PX` that creates or updates each key (~1–3 µs
 * each).
 */
export const decisionScript = `
${PRELUDE}local argv = ARGV
local keys = KEYS
local limited = ${perTag((a) => (a.callLimit ? 1 : 0))}
local width = ${perTag((a) => a.replyWidth)}
local params = ${perTag((a) => a.params.length)}
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
-- Rule specs as numbers, at their index in ARGV.
local a = 4 + tonumber(argv[3])
local P = {}
for x = 4, a - 1 do P[x] = tonumber(argv[x]) end

-- Every key is read once (MGET, in chunks; GET would fail on a key of another type) and gets a
-- slot in S, 6 values from S[base + 1]: the key, its state a, b, c, d (see READ_STATE) and the
-- TTL to write it with (false: unchanged). E[x] is the base of KEYS[x]'s slot. A key with a block
-- (see lockout.ts) has its end and length at B[base + 1], B[base + 2]; B is made for the first.
local nkeys = #keys
local S = {}
local B
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
      u = u + 6
      slots[key] = e
      local v = values[x - i + 1]
${indent(READ_STATE, 6)}      S[e + 1] = key
      S[e + 2] = sa
      S[e + 3] = sb
      S[e + 4] = sc
      S[e + 5] = sd
      S[e + 6] = false
      if bm then
        if not B then B = {} end
        B[e + 1] = bu
        B[e + 2] = bm
      end
    end
    E[x] = e
  end
  i = j + 1
end

local out = { 0 }
local o = 1
local k = 1
local total = #argv
-- Takes only: a reservation goes alone, in the reservation script.
local wait, waited = 0, 0
-- An all-or-nothing group's new states and reply offsets (6 values per entry), applied when
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
  local p, tag, cost, limit, tr, tu, tb, lock, blockFirst, blockFactor, blockMax, blockForget
  for x = 1, n do
    -- A group's entries each have their own fields; a run's takes share the first's.
    if x == 1 or not single then
      p = tonumber(argv[a])
      tag = P[p]
      lock = tag < 0
      if lock then
        tag = -tag
        local at = p + 1 + params[tag]
        blockFirst, blockFactor, blockMax, blockForget = P[at], P[at + 1], P[at + 2], P[at + 3]
      end
      if single and caller then cost = tonumber(argv[a + 2]); a = a + 3 else cost = tonumber(argv[a + 1]); a = a + 2 end
      limit = nil
      if limited[tag] == 1 then limit = tonumber(argv[a]); a = a + 1 end
      tr = false
      if cost < 0 then
        -- A per-call tier follows the entry.
        cost = -1 - cost
        tr, tu, tb = tonumber(argv[a]), tonumber(argv[a + 1]), tonumber(argv[a + 2])
        a = a + 3
      end
    end
    local e = E[k]
    k = k + 1
    local asked = cost
    if cost == 0 then asked = 1 end
    local sa, sb, sc, sd = S[e + 2], S[e + 3], S[e + 4], S[e + 5]
    local bu, bm
    if lock and B then bu, bm = B[e + 1], B[e + 2] end
    -- The outcome, and the new state (na false: none) with its TTL.
    local retry, remaining, reset, window, held
    local na, nc, nd = false, false, false
    local nb, ttl
${indent(
  dispatch((_, j) => `P[p + ${j + 1}]`, decisionBody('')),
  4,
)}${indent(
  lockoutLua(`      if not B then B = {} end
      B[e + 1] = bu
      B[e + 2] = bm
`),
  4,
)}    if retry == -3 then failed = true end
    out[o + 1] = retry
    out[o + 2] = remaining
    out[o + 3] = reset
    if width[tag] == 4 then out[o + 4] = window end
    if single then
      if na then
        S[e + 2] = na
        S[e + 3] = nb
        S[e + 4] = nc
        S[e + 5] = nd
        S[e + 6] = ttl
      end
    else
      local w = 6 * x
      W[w - 5] = na
      W[w - 4] = nb
      W[w - 3] = nc
      W[w - 2] = nd
      W[w - 1] = ttl
      W[w] = o
    end
    if retry ~= 0 then admitted = false end
    o = o + width[tag]
  end
  if not single then
    if failed then
      -- Not evaluated: the server's time lies outside the periods sent; nothing changes.
      for x = 1, n do out[W[6 * x] + 1] = -3 end
    elseif admitted then
      for x = 1, n do
        local w = 6 * x
        if W[w - 5] then
          local e = E[k - n + x - 1]
          S[e + 2] = W[w - 5]
          S[e + 3] = W[w - 4]
          S[e + 4] = W[w - 3]
          S[e + 5] = W[w - 2]
          S[e + 6] = W[w - 1]
        end
      end
    end
  end
end
out[1] = now
for e = 0, u - 6, 6 do
  local ttl = S[e + 6]
  -- The TTL as a string: Redis 7.0 converts a Lua number argument more slowly than format does
  -- (~0.2 µs of a write's ~1.5).
  if ttl then
    local na, nb, nc, nd = S[e + 2], S[e + 3], S[e + 4], S[e + 5]
    local value
${indent(STATE_VALUE, 4)}
    if B and B[e + 2] then ${appendBlock('B[e + 1]', 'B[e + 2]')} end
    call('SET', S[e + 1], value, 'PX', format('%d', ttl + slack))
  end
end
return out
`;

/**
 * Where a lone take's spec starts in {@link singleDecisionScript}'s ARGV (after its cost), and
 * so where the clock's arguments start for each algorithm: after the spec and the per-call
 * limit. A reservation's (after its cost and its longest wait) starts one later.
 */
const SINGLE_SPEC_AT = 2;

/**
 * The script of one take of one key: {@link singleDecisionScript}, or with `reserving` the
 * reservation script, which carries the longest wait after the cost and replies the ms until
 * the slot after the decision's numbers.
 */
function oneTakeScript(reserving: boolean): string {
  const specAt = reserving ? SINGLE_SPEC_AT + 1 : SINGLE_SPEC_AT;
  return `
${PRELUDE}local argv = ARGV
local key = KEYS[1]
local tag = tonumber(argv[${specAt}])
-- A rule with a lockout: its tag negated, the lockout's values after the algorithm's.
local lock = tag < 0
if lock then tag = -tag end
-- The clock's arguments come last, after the spec and the limit: the app's slack and now, or
-- the server's deadline alone.
local clock = (${perTag((a) => specAt + 1 + a.params.length + (a.callLimit ? 1 : 0))})[tag]
local blockFirst, blockFactor, blockMax, blockForget
if lock then
  local at = (${perTag((a) => specAt + 1 + a.params.length)})[tag]
  blockFirst, blockFactor = tonumber(argv[at]), tonumber(argv[at + 1])
  blockMax, blockForget = tonumber(argv[at + 2]), tonumber(argv[at + 3])
  clock = clock + 4
end
${ONE_KEY_TIER}${ONE_KEY_CLOCK}-- MGET, not GET: a key of another type reads as absent instead of failing.
local v = call('MGET', key)[1]
${READ_STATE}local cost = tonumber(argv[1])
local asked = cost
if cost == 0 then asked = 1 end
-- A refused reservation charges nothing, penalty or not: it is no single take then.
local single = ${reserving ? 'false' : 'true'}
local wait, waited = ${reserving ? 'tonumber(argv[2])' : '0'}, 0
local retry, remaining, reset, window, held
local na, nc, nd = false, false, false
local nb, ttl
local limit
${dispatch(
  (_, j) => `tonumber(argv[${specAt + 1 + j}])`,
  // The limit comes right before the clock's arguments.
  decisionBody(`  limit = tonumber(argv[clock - 1])\n`),
)}${lockoutLua('')}local out
${
  reserving
    ? 'out = { now, retry, remaining, reset, waited }'
    : `if (${perTag((a) => a.replyWidth)})[tag] == 4 then
  out = { now, retry, remaining, reset, window }
else
  out = { now, retry, remaining, reset }
end`
}
if na then
  local value
${indent(STATE_VALUE, 2)}
  if bm then ${appendBlock('bu', 'bm')} end
  call('SET', key, value, 'PX', format('%d', ttl + slack))
end
return out
`;
}

/**
 * The script of a batch that holds one single take, the usual case below saturation: the same
 * decision as {@link decisionScript} (the same Lua, spliced from the same modules) and the same
 * reply, without the batch's bookkeeping (rule table, key slots, groups). It costs Redis about
 * half as much: what a lone decision waits for is this script and the round trip.
 *
 * ARGV: `cost`, the rule's spec (its tag, then its parameters; with a lockout, see
 * {@link decisionScript}), the call's `limit` for an algorithm that takes one (empty for the
 * rule's own), a per-call tier's rate, period and burst when the call has one (see
 * `RedisAlgorithm.tiers`), then on the server's clock one more, the
 * deadline (see {@link decisionScript}; `[now, -4]` past it), and on the app's clock two,
 * `slack` and `now`. Few arguments: each costs Redis and the client a little on every call. One
 * key.
 */
export const singleDecisionScript = oneTakeScript(false);

/**
 * The reservation script (`RuleBuckets.reserve`): one take of one key that may be admitted with
 * its slot up to a longest wait ahead, for an algorithm that {@link RedisAlgorithm.reserves}
 * (the token bucket); it queues behind every reservation Redis ran before it, in the order Redis
 * runs them. A refusal charges nothing, penalty or not.
 *
 * ARGV: `cost`, the longest wait in ms, then as {@link singleDecisionScript}. Reply: as
 * {@link singleDecisionScript}'s (three numbers), then the ms until the slot (0: now).
 */
export const reserveScript = oneTakeScript(true);

export const decisionScriptSha: string = createHash('sha1').update(decisionScript).digest('hex');

/** SHA1 of {@link singleDecisionScript}. */
export const singleDecisionScriptSha: string = createHash('sha1').update(singleDecisionScript).digest('hex');

/** SHA1 of {@link reserveScript}. */
export const reserveScriptSha: string = createHash('sha1').update(reserveScript).digest('hex');
