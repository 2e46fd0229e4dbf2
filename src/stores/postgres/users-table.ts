import { SluiceError } from '../../core/errors.js';
import type { UsersTableOptions } from './schema-names.js';
import type { PostgresQueryable } from './client.js';

/** SQL type names as `format_type` spells them, for each accepted `users.type`. */
const canonicalType: Record<string, string> = {
  bigint: 'bigint',
  int8: 'bigint',
  integer: 'integer',
  int4: 'integer',
  uuid: 'uuid',
  text: 'text',
};

/**
 * Checks, before the account migration references it, that the users table the `users` option
 * names exists, has the id column, of the configured type, and that the column is unique (a
 * foreign key needs it). Each failure says what is missing and which option names it; without
 * this, PostgreSQL's error surfaced as "run store.migrate()" from inside `migrate()` itself.
 *
 * @throws SluiceError `SLUICE_CONFIG`
 * @example await checkUsersTable(tx, { table: 'users' })
 */
export async function checkUsersTable(tx: PostgresQueryable, users: UsersTableOptions): Promise<void> {
  const schema = users.schema ?? 'public';
  const table = users.table ?? 'users';
  const column = users.column ?? 'id';
  const type = canonicalType[(users.type ?? 'bigint').toLowerCase()] ?? 'bigint';
  const rows = await tx.query(
    `SELECT n.oid IS NOT NULL AS has_schema, c.oid IS NOT NULL AS has_table, a.attnum IS NOT NULL AS has_column,
  format_type(a.atttypid, a.atttypmod) AS column_type,
  EXISTS (
    SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisunique AND i.indpred IS NULL
      AND i.indnkeyatts = 1 AND i.indkey[0] = a.attnum
  ) AS is_unique
FROM (SELECT 1) x
LEFT JOIN pg_namespace n ON n.nspname = $1
LEFT JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = $2 AND c.relkind IN ('r', 'p')
LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = $3 AND a.attnum > 0 AND NOT a.attisdropped`,
    [schema, table, column],
    '',
  );
  const found = rows[0] ?? {};
  const where = `${JSON.stringify(schema)}.${JSON.stringify(table)}`;
  const fix = 'create it before store.migrate(), or set the PostgresStore users option to your users table';
  if (found.has_schema !== true)
    throw missing(`the schema ${JSON.stringify(schema)} named by users.schema does not exist; ${fix}`);
  if (found.has_table !== true)
    throw missing(`the users table ${where} named by users.schema and users.table does not exist; ${fix}`);
  if (found.has_column !== true) {
    throw missing(
      `the users table ${where} has no column ${JSON.stringify(column)} (the users.column option); name its primary-key column`,
    );
  }
  if (found.column_type !== type) {
    throw missing(
      `the column ${JSON.stringify(column)} of ${where} is ${String(found.column_type)}, but the users.type option says ${type}; set users.type to match`,
    );
  }
  if (found.is_unique !== true) {
    throw missing(
      `the column ${JSON.stringify(column)} of ${where} (the users.column option) is neither a primary key nor unique; the account mapping's foreign key needs one of them`,
    );
  }
}

function missing(message: string): SluiceError {
  return new SluiceError('SLUICE_CONFIG', `PostgresStore.migrate(): ${message}`);
}
