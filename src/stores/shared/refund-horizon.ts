import type { Rule } from '../../core/rules/rule.js';
import { MAX_WAIT_MS } from '../../core/reservation.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** The longest calendar period of each unit, a day or an hour longer where clocks move. */
const periodMs: Readonly<Record<string, number>> = {
  hour: 2 * HOUR_MS,
  day: 2 * DAY_MS,
  week: 8 * DAY_MS,
  month: 32 * DAY_MS,
};

/**
 * How long a shared store remembers a key's last reset for its refunds: at least the longest
 * a take under the rule's own parameters keeps weighing on its bucket, after which a refund of
 * it gives nothing back anyway. A token bucket: its debt cap (twice burst × period, as a
 * penalty's) and the longest wait of a reservation; a window: two windows (a sliding window's
 * previous one still counts); a calendar quota: its longest period. A receipt under a per-call
 * tier may weigh longer: a refund of such a take made more than this after it gives nothing back
 * (a reset in between could be forgotten by then: the safe side).
 */
export function refundHorizonMs(rule: Rule): number {
  const fields = rule as unknown as Record<string, unknown>;
  const { burst, windowMs, limit } = fields;
  const period = fields.periodMs;
  // A full bucket refills in burst × period / limit ms.
  if (typeof burst === 'number' && typeof period === 'number' && typeof limit === 'number')
    return 2 * Math.ceil((burst * period) / limit) + MAX_WAIT_MS;
  if (typeof windowMs === 'number') return 2 * windowMs;
  const periods = fields.periods as { per?: unknown } | undefined;
  const per = typeof periods?.per === 'string' ? periodMs[periods.per] : undefined;
  return per ?? 32 * DAY_MS;
}
