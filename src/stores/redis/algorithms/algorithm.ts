import type { Decision, DecisionParts } from '../../../core/decision.js';
import type { BucketTier, CallLimit, Rule } from '../../../core/rules/rule.js';

/**
 * What a module may do beyond a plain take, each off unless the module says so (see
 * {@link defaultCapabilities}): a new algorithm claims only what it reads.
 */
export interface RedisCapabilities {
  /** Whether a take carries its per-call limit (the rule accepts one). */
  readonly callLimit: boolean;
  /**
   * Whether a take, a reservation or an adjustment may carry a per-call tier (a token bucket's
   * rate, period and burst: the rule's `acceptsCallTier`), read into `tr`, `tu`, `tb`. A module
   * takes a per-call limit or a tier, never both: the one-key scripts find the limit right
   * before the tier's place.
   */
  readonly tiers: boolean;
  /** Whether the module reserves slots (reads `wait`, sets `waited`): the reservation script holds it. */
  readonly reserves: boolean;
  /** Integers of the reply per decision: retry, remaining, reset, and (4) the window's length. */
  readonly replyWidth: 3 | 4;
}

/** No per-call limit, no tier, no reservation, replies of three. */
export const defaultCapabilities: RedisCapabilities = {
  callLimit: false,
  tiers: false,
  reserves: false,
  replyWidth: 3,
};

/**
 * What the Redis store needs to decide one algorithm next to the data: its decision and its
 * adjustment (a refund or a settlement) in Lua, the parameters they read, the shape of its
 * reply, and how a bound rule's parameters and replies are encoded; what it does beyond a plain
 * take it claims among {@link RedisCapabilities}. One module per algorithm
 * (`token-bucket.ts`, …); the registry (`index.ts`) finds a module by the rule's `kind`, and
 * `scripts.ts` splices every module's Lua into the two decision scripts and the adjustment
 * script. A module translates its core rule (`src/core/<rule>.ts`) and is held to it by the
 * store conformance suite and a differential property test against the memory store.
 *
 * The Lua fragment runs inside a branch of the scripts' dispatch. It reads these locals:
 * - `now`: the time of the decision, whole ms since the Unix epoch;
 * - `cost` (0 for a peek) and `asked` (the cost, or 1 for a peek);
 * - `limit`: the per-call limit as a number, or nil for the rule's own (only when
 *   {@link RedisCapabilities.callLimit});
 * - `tr`, `tu`, `tb`: a token bucket's per-call tier (rate, period in ms, burst) as numbers, `tr`
 *   false for the rule's own parameters (only when {@link RedisCapabilities.tiers});
 * - `single`: true for a single take, false inside an all-or-nothing group and for a
 *   reservation (a refusal is charged under a penalty only for a single take: a group that
 *   refuses charges nothing, and so does a reservation, as the core's `reserve`);
 * - `wait`: a reservation's longest wait in ms (`RuleBuckets.reserve`), 0 for a take; only a
 *   module that {@link RedisCapabilities.reserves} reads it;
 * - `sa`, `sb`, `sc`, `sd`: the key's state, numbers parsed from its value `"<a>:<b>"`,
 *   `"<a>:<b>:<c>"` or `"<a>:<b>:<c>:<d>"` (`sa` false when the key is absent or unreadable; `sc`
 *   false when the value has two fields, `sd` when it has fewer than four); what they mean is
 *   the module's own encoding;
 * - its parameters, under the names of {@link RedisAlgorithmModule.params}, as numbers;
 * - `MAX_PENALTY`: the count a penalty saturates at (`MAX_PENALTY_COUNT`).
 * It sets:
 * - `retry`: 0 admitted; > 0 refused, retry after so many ms; -1 refused for good (Infinity);
 *   -3 not evaluated, nothing changes (the time lies outside what Node sent; Node retries with
 *   the server's time);
 * - `waited`, for an admitted reservation, the ms until its slot (left 0 otherwise);
 * - `remaining`, `reset` (ms until the state is as good as new), and `window` when
 *   {@link RedisCapabilities.replyWidth} is 4;
 * - when the take charges: `na`, `nb`, `nc`, `nd` (the new state; `nc` false writes two fields,
 *   `nd` false three) and
 *   `ttl` (ms after `now` from which forgetting the key changes no decision: the key's TTL).
 *   `na` stays false when nothing is written. Every number written must be a whole number below
 *   2^53 (values are written with `%d`).
 */
export interface RedisAlgorithmModule extends Partial<RedisCapabilities> {
  /** The rule kind this module decides (`Rule.kind`). */
  readonly kind: string;
  /**
   * The Lua names of the rule's parameters, in the order {@link RuleEncoder.spec} sends them
   * (after the algorithm's tag).
   */
  readonly params: readonly string[];
  /** The decision in Lua (see above). */
  readonly lua: string;
  /**
   * The adjustment in Lua: a translation of the core rule's `adjust`, run by the adjustment
   * script inside the same kind of dispatch, with the rule's parameters bound as for
   * {@link lua}. It reads `now`, `sa`, `sb`, `sc`, `sd`, `MAX_PENALTY` and the tier `tr`, `tu`,
   * `tb` (the tier the adjusted take was made under) as the decision does, and:
   * - `delta`: below 0, the units to give back of a take made at the time whose window is
   *   `taken`; above 0, the units to charge at `now` (never 0);
   * - `taken`: the start of the window (calendar period) the refunded take was made in, as
   *   {@link RuleEncoder.windowOf} computed it (0 for an algorithm without windows);
   * - `refilled`: the refunded take's `until` (its time plus its decision's `resetMs`) in the
   *   script's time, by which a token bucket had refilled the take's units (windows ignore it).
   * It sets `na`, `nb`, `nc`, `nd` and `ttl` as the decision does when the state changes (`na` false:
   * unchanged, nothing written), except that `ttl` may be 0 (a refund that leaves the state as
   * good as new); and `status` to -3 when it could not be evaluated (the time lies outside
   * what Node sent). A lockout's fields are the script's, never the module's.
   */
  readonly adjustLua: string;
  /**
   * A Lua expression read after a refusal that wrote nothing, in the scope of {@link lua}: the
   * ms after `now` until which the state as read (`sa`, `sb`, `sc`, `sd`) may still decide
   * something.
   * A lockout that starts then writes that state back with its block, with a TTL of at least
   * this (see lockout.ts); longer than needed only keeps an idle key a little longer.
   */
  readonly held: string;
  /**
   * Local functions the decision or the adjustment calls, defined once at the top of each
   * script (their names must not collide with another module's). Library functions available
   * there as locals: `floor`, `ceil`.
   */
  readonly luaFunctions?: string;
  /**
   * The encoder of one bound rule of this kind.
   * @param tag the algorithm's number in the scripts' dispatch (the first value of every spec)
   * @throws SluiceError `SLUICE_CONFIG` when the rule lacks what this module reads (a rule of
   * another origin claiming this kind)
   */
  encoder(rule: Rule, name: string, tag: number): RuleEncoder;
}

/** A module with every capability filled in: what the scripts and the store read. */
export type RedisAlgorithm = RedisAlgorithmModule & RedisCapabilities;

/** The module with the capabilities it does not claim set to {@link defaultCapabilities}. */
export function withDefaultCapabilities(module: RedisAlgorithmModule): RedisAlgorithm {
  return { ...defaultCapabilities, ...module };
}

/** One bound rule's side of the scripts: its parameters out, its replies back in. */
export interface RuleEncoder {
  /**
   * The values the script reads for the rule at about `now`: the algorithm's tag, then its
   * parameters. The same array for as long as they do not change, so that a script call sends
   * each rule once (calls find a rule's parameters by the array's identity).
   */
  spec(now: number): readonly string[];
  /** Whether {@link spec} depends on `now` (a calendar's period bounds): otherwise `now` is ignored. */
  readonly timed: boolean;
  /**
   * For a module with {@link RedisCapabilities.tiers}: the tier a call sends, or undefined when it
   * sends none (no tier, a count, or a tier equal to the rule's own parameters, which decides
   * exactly as none). `limit` has been checked (see take-arguments.ts). Absent otherwise.
   */
  tierOf?(limit: CallLimit | undefined): BucketTier | undefined;
  /**
   * The start of the window (calendar period) holding the instant `at` (ms since the Unix
   * epoch), as the core rule's `adjust` finds a refunded take's window; 0 for an algorithm
   * without windows. Computed in Node: Lua has no time-zone database.
   */
  windowOf(at: number): number;
  /** The decision from the script's numbers. */
  decision(reply: ScriptDecision): Decision;
}

/**
 * A decision's numbers as a script replied them, with the call they answer, for
 * {@link RuleEncoder.decision}: by name, so that two of them cannot be swapped unnoticed.
 * `windowMs` is 0 when the reply has no window (the encoder knows it then).
 */
export interface ScriptDecision extends Pick<
  DecisionParts,
  'allowed' | 'remaining' | 'cost' | 'retryAfterMs' | 'resetMs' | 'windowMs'
> {
  /** The per-call limit the call was made under; undefined: the rule's own. */
  readonly limit: CallLimit | undefined;
}
