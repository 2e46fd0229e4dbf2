import { optionError } from '../../core/errors.js';
import { checkRuleName } from '../shared/rule-name.js';
import type { Migration } from './migration-steps.js';
import type { SchemaNames } from './schema-names.js';
import { epochMs } from './sql-clock.js';

/** What a time zone name may hold: an IANA name ("America/Argentina/Buenos_Aires", "Etc/GMT+5"). */
const timeZonePattern = /^[A-Za-z0-9_+\-/]{1,64}$/;

/**
 * Migration 005 moved every rule that counts per window to `window_counters` but left the per-day
 * rows of `quota_counters` unread, so a client at its daily limit got a fresh quota on upgrade
 * day. This moves those rows over: each row of a day not before yesterday in UTC (every zone's
 * today is among them; older days are spent in every zone and stay for prune) is deleted from
 * `quota_counters` and its bucket's latest day written as the window from that day's start to the
 * next day's start in the rule's zone, added to what the bucket counted since the upgrade in the
 * same day. Moving rather than copying makes the statement idempotent: run again, it finds nothing.
 */
export function carryQuotaCounters(n: SchemaNames, zones: Readonly<Record<string, string>>): Migration {
  if (typeof zones !== 'object' || zones === null || Array.isArray(zones))
    throw optionError('postgresMigrations quotaTimeZones', 'an object of rule names to time zone names');
  const rows: string[] = [];
  for (const [rule, zone] of Object.entries(zones)) {
    checkRuleName(rule, 'postgresMigrations quotaTimeZones rule name');
    if (typeof zone !== 'string' || !timeZonePattern.test(zone))
      throw optionError('postgresMigrations quotaTimeZones zone', 'an IANA time zone name');
    // Both are checked against patterns without quotes or backslashes: safe as literals.
    rows.push(`('${rule}', '${zone}')`);
  }
  const zoneRows =
    rows.length === 0
      ? 'SELECT NULL::text AS rule, NULL::text AS tz WHERE false'
      : `VALUES ${rows.join(', ')}`;
  return {
    name: '010_carry_quota_counters',
    statements: [
      `WITH zones (rule, tz) AS (${zoneRows}),
moved AS (
  DELETE FROM ${n.quotaCounters}
  WHERE day >= (statement_timestamp() AT TIME ZONE 'UTC')::date - 1
  RETURNING rule, bucket, day, count, account_bucket
),
latest AS (
  SELECT DISTINCT ON (m.rule, m.bucket) m.rule, m.bucket, m.count, m.account_bucket,
    ${epochMs(`${n.dayStart}(COALESCE(z.tz, 'UTC'), m.day)`)} AS start_ms,
    ${epochMs(`${n.dayStart}(COALESCE(z.tz, 'UTC'), m.day + 1)`)} AS end_ms
  FROM moved m LEFT JOIN zones z ON z.rule = m.rule
  ORDER BY m.rule, m.bucket, m.day DESC
)
INSERT INTO ${n.windowCounters} AS w (rule, bucket, window_start, count, previous, expires_at, account_bucket)
SELECT rule, bucket, start_ms, count, 0, end_ms, account_bucket FROM latest
ON CONFLICT (rule, bucket) DO UPDATE SET
  count = CASE WHEN w.window_start = EXCLUDED.window_start THEN w.count + EXCLUDED.count
    WHEN w.window_start < EXCLUDED.window_start THEN EXCLUDED.count ELSE w.count END,
  previous = CASE WHEN w.window_start < EXCLUDED.window_start THEN 0 ELSE w.previous END,
  window_start = GREATEST(w.window_start, EXCLUDED.window_start),
  expires_at = GREATEST(w.expires_at, EXCLUDED.expires_at)`,
    ],
  };
}
