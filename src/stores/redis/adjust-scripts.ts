import { createHash } from 'node:crypto';
import { KEEP_BLOCK } from './lockout.js';
import { READ_STATE, STATE_VALUE, appendBlock } from './state-value.js';
import { PRELUDE, perTag, ONE_KEY_TIER, ONE_KEY_CLOCK, dispatch, indent, SERVER_NOW } from './scripts.js';

/*
 * The scripts that change a bucket after its decision: the adjustment (refunds, settlements,
 * penalties) and the reset that leaves a marker refunds read. They splice the same shared
 * pieces as the decision scripts in scripts.ts.
 */

/**
 * Where the rule's spec starts in {@link adjustScript}'s ARGV (after `delta`, `taken`,
 * `refilled`, `at` and `horizon`).
 */
const ADJUST_SPEC_AT = 6;

/**
 * The adjustment script: settles one admitted take of one key after the fact (a refund or a
 * settlement, `RuleBuckets.adjust`), atomically, without deciding: the algorithm's adjustment
 * (each module's `adjustLua`, a translation of the core rule's `adjust`) on the key's state as
 * read, and at most one write. A lockout's block is never touched: the value keeps it, and
 * under the rule's lockout the key lives until `blockForget` after the block's end as after a
 * take. Every write sets the TTL the rule's horizon gives the new state (plus the app's slack);
 * a state left as good as new with nothing to remember is deleted instead on the server's
 * clock (a TTL of 0), and kept for the slack on the app's.
 *
 * ARGV: `delta` (below 0 a refund of that many units, above 0 a charge), `taken` (the start of
 * the refunded take's window or period in the script's time, computed by Node: see
 * `RuleEncoder.windowOf`; 0 for a token bucket), `refilled` (the take's `until` in the script's
 * time: when its units had refilled; only a token bucket reads it), `at` (the take's time in the
 * script's time, never later than the take ran: see {@link resetScript}), `horizon` (how long
 * the store remembers a reset, see `refundHorizonMs`), the rule's spec (as for
 * {@link singleDecisionScript}, without a per-call limit), the tier's three values when the
 * adjusted take was made under one, then the clock's arguments as for
 * {@link singleDecisionScript}: on the server's clock the deadline (`[now, -4]` past it, nothing
 * changed), on the app's clock `slack` and `now`. Two keys: the bucket's, and its reset marker
 * (see {@link resetScript}), in the same slot.
 *
 * A refund of a take made at or before the key's last reset gives nothing back: the reset gave
 * the key a new bucket, which the old take never charged. So does a refund more than `horizon`
 * after a take that weighs longer than `horizon` (a take under a long per-call tier), since a
 * reset in between may be forgotten by then (the safe side).
 *
 * Reply: `[now, status]`: status 0 done (changed or not), -3 not evaluated and nothing changed (a
 * calendar's period bounds sent by Node do not hold the server's time: Node retries with the
 * server's), -4 started past its deadline and nothing changed.
 */
export const adjustScript = `
${PRELUDE}local argv = ARGV
local key = KEYS[1]
local delta = tonumber(argv[1])
local taken = tonumber(argv[2])
local refilled = tonumber(argv[3])
local at = tonumber(argv[4])
local horizon = tonumber(argv[5])
local tag = tonumber(argv[${ADJUST_SPEC_AT}])
-- A rule with a lockout: its tag negated, the lockout's values after the algorithm's.
local lock = tag < 0
if lock then tag = -tag end
local clock = (${perTag((a) => ADJUST_SPEC_AT + 1 + a.params.length)})[tag]
local blockForget
if lock then
  blockForget = tonumber(argv[clock + 3])
  clock = clock + 4
end
${ONE_KEY_TIER}${ONE_KEY_CLOCK}local read = call('MGET', key, KEYS[2])
if delta < 0 then
  local reset = read[2] and tonumber(read[2])
  if (reset and at <= reset) or (now - at > horizon and refilled - at > horizon) then return { now, 0 } end
end
local v = read[1]
${READ_STATE}local status = 0
local na, nc, nd = false, false, false
local nb, ttl
${dispatch(
  (_, j) => `tonumber(argv[${ADJUST_SPEC_AT + 1 + j}])`,
  (algorithm) => algorithm.adjustLua,
)}if na then
  if lock then
${indent(KEEP_BLOCK, 4)}  end
  local value
${indent(STATE_VALUE, 2)}
  if bm then ${appendBlock('bu', 'bm')} end
  if ttl + slack > 0 then
    call('SET', key, value, 'PX', format('%d', ttl + slack))
  else
    call('DEL', key)
  end
end
return { now, status }
`;

/**
 * The reset script: forgets a key's bucket and remembers when (the key's reset marker), so that
 * {@link adjustScript} can tell a refund of a take from before the reset, which must give nothing
 * back. KEYS: the bucket's key, its marker's (same slot). ARGV: `horizon` (the marker's TTL, see
 * `refundHorizonMs`), then on the app's clock the caller's `now` and the slack; on the server's
 * clock nothing more, and the time is `TIME`'s. The marker keeps the latest reset's time (a later
 * reset from a node whose clock lags keeps it), lives `horizon` from this reset, and a value of
 * another type is overwritten (a self-repair, in the store's own prefix). Reply: the time kept.
 */
export const resetScript = `
local call = redis.call
local format = string.format
local horizon = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local slack = 0
if now then
  slack = tonumber(ARGV[3])
else
${SERVER_NOW}end
local kept = call('MGET', KEYS[2])[1]
kept = kept and tonumber(kept)
if kept and kept > now then now = kept end
call('DEL', KEYS[1])
call('SET', KEYS[2], format('%d', now), 'PX', format('%d', horizon + slack))
return now
`;

/** SHA1 of {@link adjustScript}, computed here so that EVALSHA needs no SCRIPT LOAD first. */
export const adjustScriptSha: string = createHash('sha1').update(adjustScript).digest('hex');

/** SHA1 of {@link resetScript}. */
export const resetScriptSha: string = createHash('sha1').update(resetScript).digest('hex');
