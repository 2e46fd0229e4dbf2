import { MAX_BLOCK_FACTOR, MAX_BLOCK_MS } from '../../core/rules/lockout.js';
import { optionError } from '../../core/errors.js';
import type { Rule } from '../../core/rules/rule.js';
import type { RuleEncoder } from './algorithms/algorithm.js';

/*
 * Lockouts (a rule's `block` option, core/rules/lockout.ts) in Redis, once for every algorithm: the
 * block lives in the key's value next to the bucket (see state-value.ts) and is decided in the
 * same script step as the bucket, around the algorithm's own decision.
 *
 * A rule with a lockout sends its spec with the algorithm's tag negated and the lockout's four
 * numbers after the algorithm's parameters: first block, factor, longest block, memory (whole ms,
 * the factor a double). A rule without one sends exactly what it sent before.
 */

/** The four values a rule's lockout adds to its spec, checked; undefined for a rule without one. */
function lockoutValues(rule: Rule): readonly string[] | undefined {
  const block = (rule as { block?: unknown }).block;
  if (block === undefined) return undefined;
  const fields = (block ?? {}) as Record<string, unknown>;
  const { durationMs, factor, maxMs, forgetAfterMs } = fields;
  const valid =
    isLength(durationMs, 1) &&
    typeof factor === 'number' &&
    factor >= 1 &&
    factor <= MAX_BLOCK_FACTOR &&
    isLength(maxMs, durationMs as number) &&
    isLength(forgetAfterMs, 0);
  if (!valid)
    throw optionError(
      'RedisStore rule block',
      `a lockout checked by sluice (a ${rule.kind} rule made by sluice)`,
    );
  // String(factor) is the shortest text that reads back as the same double in Lua's tonumber.
  return [String(durationMs), String(factor), String(maxMs), String(forgetAfterMs)];
}

function isLength(value: unknown, min: number): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= MAX_BLOCK_MS;
}

/**
 * The encoder of a rule bound with its lockout: `encoder`'s spec with the tag negated and the
 * lockout's values appended (the same array for as long as the algorithm's is), and `encoder`'s
 * decisions and windows unchanged (the script returns a blocked refusal in the algorithm's own
 * numbers).
 */
export function withLockout(rule: Rule, encoder: RuleEncoder): RuleEncoder {
  const lockout = lockoutValues(rule);
  if (lockout === undefined) return encoder;
  let inner: readonly string[] | undefined;
  let spec: readonly string[] = [];
  return {
    timed: encoder.timed,
    spec(now: number): readonly string[] {
      const own = encoder.spec(now);
      if (own !== inner) {
        inner = own;
        spec = [String(-Number(own[0])), ...own.slice(1), ...lockout];
      }
      return spec;
    },
    windowOf: encoder.windowOf,
    ...(encoder.tierOf === undefined ? {} : { tierOf: encoder.tierOf }),
    decision: encoder.decision,
  };
}

/**
 * Lua run under a lockout (`lock`) before a key is written (`na` set): a key with a block (`bu`,
 * `bm`) lives until `blockForget` after the block's end, when that is later than the TTL the
 * algorithm gave it (`ttl`), so that a refusal until then still escalates. Shared by the
 * decisions and the adjustment script.
 */
export const KEEP_BLOCK = `if na and bm then
  local kept = bu + blockForget - now
  if ttl < kept then ttl = kept end
end
`;

/**
 * The lockout around an algorithm's decision, spliced into both scripts right after the
 * dispatch: a translation of `decideWithBlock` (core/rules/lockout.ts). It reads `lock` (the rule has a
 * lockout), its values `blockFirst`, `blockFactor`, `blockMax`, `blockForget`, the key's block
 * `bu`, `bm` (nil when never blocked), the key's fields `sa`, `sb`, `sc`, `sd`, `single`, `cost`,
 * `now`, the algorithm's outcome (`retry`, `remaining`, `reset`, `na`, `nb`, `nc`, `nd`, `ttl`)
 * and `held`
 * (see `RedisAlgorithm.held`); it rewrites the outcome.
 *
 * - Blocked (`now` before `bu`): refused, nothing charged (the algorithm's write is dropped);
 *   the wait is the block's end, or the bucket's when that is later; a cost refused for good
 *   (-1) stays so, and a calendar not evaluated (-3) changes nothing either way.
 * - A single take refused, not for good (`retry` > 0, a cost): a block starts at `now`, its
 *   length the first block's, or for a key still remembered the last one times the factor
 *   (one double multiplication, then ceil: the same whole number as in JavaScript), capped.
 *   The bucket is written as the algorithm left it (charged under a penalty, else unchanged).
 * - Every write of a key with a block keeps it until `blockForget` after its end: the TTL is
 *   the algorithm's or that, whichever is longer.
 *
 * @param remember Lua run when a block starts, to keep `bu`, `bm` for the key's next decision
 */
export function lockoutLua(remember: string): string {
  return `if lock then
  if bu and now < bu then
    na = false
    local left = bu - now
    if retry >= 0 and retry < left then retry = left end
    if reset < left then reset = left end
    remaining = 0
  else
    if single and cost > 0 and retry > 0 then
      local length = blockFirst
      if bm and bm > 0 and now < bu + blockForget then
        length = ceil(bm * blockFactor)
        if length > blockMax then length = blockMax end
      end
      bu, bm = now + length, length
      if retry < length then retry = length end
      if reset < length then reset = length end
      remaining = 0
      if not na then na, nb, nc, nd, ttl = sa or 0, sb, sc, sd, held end
${remember}    end
  end
${KEEP_BLOCK.replace(/^(?=.)/gm, '  ')}end
`;
}
