import { makeDecision, type Decision } from '../../core/decision.js';
import type { Rule } from '../../core/rule.js';
import type { BucketState } from '../../core/state.js';

/**
 * Turns the state a statement returned (the bucket before the take) into decisions, one per
 * take of a coalesced group, in order. A token bucket replays the core algorithm itself on the
 * queued time (now = epoch = 0, so only the exact difference matters); a quota replays
 * src/core/quota.ts with the day's reset that PostgreSQL computed.
 */
export class DecisionReplay {
  private readonly state: BucketState = { value: 0, window: 0, previous: 0 };
  private resetMs = 0;
  private windowMs = 0;

  constructor(
    private readonly rule: Rule,
    private readonly name: string,
    /** Reduced units → the core's units (the gcd the statement divided by). */
    private readonly scale: number,
  ) {}

  /** Starts from a returned row: `q` (token bucket) or `used` and `reset_ms` (quota). */
  start(row: Record<string, unknown>): void {
    if (this.rule.kind === 'token-bucket') {
      this.state.value = (row.q as number) * this.scale;
    } else {
      this.state.value = row.used as number;
      this.resetMs = row.reset_ms as number;
      this.windowMs = row.window_ms as number;
    }
  }

  /** The next take's decision; updates the replayed state as the statement did. */
  next(cost: number, limit: number | undefined): Decision {
    const rule = this.rule;
    if (rule.kind === 'token-bucket') return rule.decide(this.state, 0, 0, this.name, cost, undefined, true);
    // Mirrors CalendarQuotaRule.decide; only the day's bounds come from PostgreSQL.
    const quota = limit === undefined ? rule.limit : limit;
    const used = this.state.value;
    const asked = cost === 0 ? 1 : cost;
    const left = used >= quota ? 0 : quota - used;
    const resetMs = this.resetMs;
    const windowMs = this.windowMs;
    const name = this.name;
    if (asked > quota)
      return makeDecision(false, name, quota, quota, left, cost, Infinity, resetMs, windowMs);
    if (asked <= left) {
      this.state.value = used + cost;
      return makeDecision(true, name, quota, quota, left - cost, cost, 0, resetMs, windowMs);
    }
    if (rule.penalty && cost > 0) this.state.value = used + cost;
    return makeDecision(false, name, quota, quota, left, cost, resetMs, resetMs, windowMs);
  }
}
