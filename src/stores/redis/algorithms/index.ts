import { optionError } from '../../../core/errors.js';
import type { Rule } from '../../../core/rules/rule.js';
import { withDefaultCapabilities, type RedisAlgorithm, type RuleEncoder } from './algorithm.js';
import { anchoredWindowAlgorithm } from './anchored-window.js';
import { calendarQuotaAlgorithm } from './calendar-quota.js';
import { fixedWindowAlgorithm } from './fixed-window.js';
import { slidingWindowAlgorithm } from './sliding-window.js';
import { tokenBucketAlgorithm } from './token-bucket.js';
import { withLockout } from '../lockout.js';

export type {
  RedisAlgorithm,
  RedisAlgorithmModule,
  RedisCapabilities,
  RuleEncoder,
  ScriptDecision,
} from './algorithm.js';

/**
 * The algorithms the Redis store decides, one module each. An algorithm's tag in the scripts is
 * its position here plus one: appending keeps the tags of the others, and the scripts (built
 * from this list) change with it, so a new SHA is loaded. A new algorithm adds its module and
 * one line here; the capabilities a module does not claim are off.
 */
export const redisAlgorithms: readonly RedisAlgorithm[] = [
  tokenBucketAlgorithm,
  calendarQuotaAlgorithm,
  fixedWindowAlgorithm,
  slidingWindowAlgorithm,
  anchoredWindowAlgorithm,
].map(withDefaultCapabilities);

const byKind = new Map(redisAlgorithms.map((algorithm, i) => [algorithm.kind, { algorithm, tag: i + 1 }]));

/** A bound rule's module and its encoder. */
export interface RedisRuleCodec {
  readonly algorithm: RedisAlgorithm;
  readonly encoder: RuleEncoder;
}

/**
 * The module and encoder of `rule`, found by its kind; a rule's lockout, if any, is encoded
 * around the module's (see lockout.ts).
 * @throws SluiceError `SLUICE_CONFIG` for a value that is not a rule of a kind this store decides,
 * or whose lockout was not made by sluice
 */
export function redisCodecFor(rule: Rule, name: string): RedisRuleCodec {
  const kind = rule !== null && typeof rule === 'object' ? (rule as { kind?: unknown }).kind : undefined;
  const found = typeof kind === 'string' ? byKind.get(kind) : undefined;
  if (found === undefined) {
    throw optionError(
      'RedisStore rule',
      `a rule of a kind this store decides (${redisAlgorithms.map((a) => a.kind).join(', ')})`,
    );
  }
  const encoder = found.algorithm.encoder(rule, name, found.tag);
  return { algorithm: found.algorithm, encoder: withLockout(rule, encoder) };
}
