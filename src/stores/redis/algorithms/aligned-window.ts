import type { Rule } from '../../../core/rules/rule.js';
import type { RedisAlgorithmModule, RuleEncoder } from './algorithm.js';
import { countDecision } from './count-decision.js';
import { penaltyFlag, wholeField } from './rule-fields.js';

/** What a window aligned to the Unix epoch brings of its own: its kind and its Lua. */
export type AlignedWindowLua = Pick<
  RedisAlgorithmModule,
  'kind' | 'lua' | 'adjustLua' | 'held' | 'luaFunctions'
>;

/**
 * A module of a window of `w` ms aligned to the Unix epoch (the fixed and the sliding window):
 * they count alike and differ only in their Lua. Parameters: `penalty`, `ruleLimit`, `w`. A
 * per-call limit; replies of 3 (the window is `w`, known to Node).
 */
export function alignedWindowAlgorithm(own: AlignedWindowLua): RedisAlgorithmModule {
  return { ...own, params: ['penalty', 'ruleLimit', 'w'], callLimit: true, encoder: windowEncoder };
}

function windowEncoder(rule: Rule, name: string, tag: number): RuleEncoder {
  const ruleLimit = wholeField(rule, 'limit');
  const windowMs = wholeField(rule, 'windowMs');
  const spec = [String(tag), penaltyFlag(rule), String(ruleLimit), String(windowMs)];
  return {
    timed: false,
    spec: () => spec,
    windowOf: (at) => Math.floor(at / windowMs) * windowMs,
    decision: (reply) => countDecision(reply, name, ruleLimit, windowMs),
  };
}
