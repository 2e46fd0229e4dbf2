import type { AccountSql, SchemaNames } from './schema-names.js';

/**
 * The CTEs an account take starts with: `f.session` is true when the user still exists. The
 * user's row is locked in this statement, so either this runs first and a concurrent deletion
 * of the user waits, then cascades to what this wrote; or the deletion ran first, no row is
 * found, and the take falls back to the anonymous bucket. The mapping row (bucket → user) is
 * written here too, so that the bucket row the take writes can reference it.
 *
 * @param accountParam the parameter number of the account bucket
 * @param userParam the parameter number of the user id
 */
export function accountCtes(
  account: AccountSql,
  names: SchemaNames,
  accountParam: number,
  userParam: number,
): string {
  return `u AS (SELECT 1 FROM ${account.users} WHERE ${account.column} = $${userParam}::${account.type} FOR KEY SHARE),
f AS (SELECT EXISTS (SELECT 1 FROM u) AS session),
m AS (
  INSERT INTO ${names.accountBuckets} (bucket, user_id)
  SELECT $${accountParam}::text, $${userParam}::${account.type} FROM f WHERE f.session
  ON CONFLICT (bucket) DO NOTHING
),
`;
}

/**
 * The one row an account take decides: the account bucket while the user exists (linked to it
 * by `account`), otherwise the anonymous bucket; with no anonymous bucket (an account key
 * through a limiter, whose user was deleted meanwhile) a peek of the account bucket, which
 * writes nothing. Columns as the per-take source of every rule statement.
 *
 * @param first the parameter number of the account bucket; then cost, limit, anonymous bucket
 * @param extra the algorithm's own per-take columns (after a comma each), e.g. a token bucket's tier
 */
export function accountSource(first: number, extra = ''): string {
  const [bucket, cost, limit, anon] = [first, first + 1, first + 2, first + 3];
  return `SELECT CASE WHEN f.session THEN $${bucket}::text ELSE COALESCE($${anon}::text, $${bucket}::text) END AS bucket,
    CASE WHEN f.session OR $${anon}::text IS NOT NULL THEN $${cost}::bigint ELSE 0 END AS cost,
    1::bigint AS n, $${limit}::bigint AS quota${extra}, CASE WHEN f.session THEN $${bucket}::text END AS account
  FROM f`;
}

/**
 * Deletes every bucket row linked to a user ($1) in every table that holds buckets, and its
 * mappings; answers the number of bucket rows deleted. Locks the user's row first, so it
 * serialises with account takes.
 */
export function forgetAccountText(
  account: AccountSql,
  names: SchemaNames,
  tables: readonly string[],
): string {
  const { users, column, type } = account;
  const deletes = tables.map(
    (table, i) =>
      `d${i} AS (DELETE FROM ${table} WHERE account_bucket IN (SELECT bucket FROM m) RETURNING 1),`,
  );
  const counts = tables.map((_, i) => `(SELECT count(*) FROM d${i})`).join(' + ');
  return `WITH u AS (SELECT 1 FROM ${users} WHERE ${column} = $1::${type} FOR UPDATE),
m AS (SELECT bucket FROM ${names.accountBuckets} WHERE user_id = $1::${type} AND EXISTS (SELECT 1 FROM u)),
${deletes.join('\n')}
x AS (DELETE FROM ${names.accountBuckets} WHERE bucket IN (SELECT bucket FROM m))
SELECT (${counts})::float8 AS removed`;
}
