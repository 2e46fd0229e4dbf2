import type { Rule } from '../../../core/rules/rule.js';
import { optionError } from '../../../core/errors.js';
import type { AlgorithmModule } from './algorithm-module.js';
import { anchoredWindowModule } from './anchored-window.js';
import { calendarQuotaModule } from './calendar-quota.js';
import { fixedWindowModule } from './fixed-window.js';
import { slidingWindowModule } from './sliding-window.js';
import { tokenBucketModule } from './token-bucket.js';

export type { AdjustSql, AlgorithmBinding, AlgorithmModule, RuleSql } from './algorithm-module.js';
export type { TakeAllFamily } from './take-all-family.js';
export { stalePeriodsAt } from './calendar-quota.js';
export { windowPruneText } from './window-counts.js';
export { lockoutBinding, lockoutRuleSql, takeAllLockout } from './lockout.js';

/**
 * The algorithms the PostgreSQL store decides, one module each, found by the rule's kind. A new
 * algorithm adds its module here.
 */
const modules: ReadonlyMap<string, AlgorithmModule> = new Map(
  [tokenBucketModule, fixedWindowModule, slidingWindowModule, calendarQuotaModule, anchoredWindowModule].map(
    (m) => [m.kind, m],
  ),
);

/**
 * The module deciding `rule`.
 * @throws SluiceError `SLUICE_CONFIG` for a rule of a kind this store has no module for
 */
export function algorithmOf(rule: Rule): AlgorithmModule {
  const kind = (rule as { kind?: unknown } | null | undefined)?.kind;
  const module = typeof kind === 'string' ? modules.get(kind) : undefined;
  if (module === undefined) {
    throw optionError(
      'PostgresStore rule',
      `a rule of a kind this store decides (${[...modules.keys()].join(', ')})`,
    );
  }
  return module;
}
