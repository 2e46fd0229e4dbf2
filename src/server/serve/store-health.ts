import type { Limiter } from '../../limiter/limiter.js';
import type { CompiledPolicy } from '../policy/compile.js';

/** One limit of the policy served and its store breaker's state, for /metrics and /readyz. */
export interface LimitHealth {
  readonly rule: string;
  readonly limit: string;
  readonly breakerOpen: boolean;
  readonly openings: number;
  /** Calls that ran out of time while the store kept answering others (load, not failure). */
  readonly overloads: number;
}

/**
 * The store health of every limit in a policy, read from each limiter's breaker. A limiter shared
 * by a kept rule after a reload is read once per rule that holds it, like its decisions.
 */
export function limitHealth(compiled: CompiledPolicy): LimitHealth[] {
  const out: LimitHealth[] = [];
  for (const rule of compiled.rules)
    for (const limiter of rule.limiters) out.push(healthOf(rule.name, limiter));
  return out;
}

function healthOf(rule: string, limiter: Limiter): LimitHealth {
  const stats = limiter.stats();
  return {
    rule,
    limit: limiter.name,
    breakerOpen: stats.breaker === 'open',
    openings: stats.breakerOpenings,
    overloads: stats.overloads,
  };
}

/**
 * How many limits of the policy have an open breaker: their store is known to be failing, so
 * their decisions are their failure policy's, and the server is not ready for traffic that
 * needs them.
 */
export function openBreakers(compiled: CompiledPolicy): number {
  let open = 0;
  for (const rule of compiled.rules)
    for (const limiter of rule.limiters) if (limiter.storeHealth().breaker === 'open') open++;
  return open;
}
