import { SluiceError, configError } from '../../core/errors.js';
import { hasSqlState, timeLeftOf } from './bounded-client.js';

/** One result row: column name → value, as `pg` and postgres.js both return them. */
export type PostgresRow = Record<string, unknown>;

/**
 * The one command sluice sends: a parameterised statement. `name` identifies the statement text
 * so a driver can prepare it once per connection. A value may be an object whose `toPostgres()`
 * (as `pg` calls it) or `toString()` (as postgres.js does) gives its text when the statement is
 * sent: the time a decision has left is read then, not when the call was queued.
 */
export interface PostgresQueryable {
  query(text: string, values: readonly unknown[], name: string): Promise<readonly PostgresRow[]>;
}

/**
 * The narrow driver type {@link PostgresStore} works through: statements, and a transaction on
 * one connection (only for all-or-nothing cascades). Adapters exist for `pg` and postgres.js;
 * anything else can implement these two methods.
 *
 * @example
 * const client = pgClient(new pg.Pool({ connectionString }));
 */
export interface PostgresClient extends PostgresQueryable {
  /**
   * Runs `fn` on one connection between BEGIN and COMMIT, or ROLLBACK when `fn` returns
   * `commit: false` or throws.
   */
  transaction<T>(fn: (tx: PostgresQueryable) => Promise<{ commit: boolean; value: T }>): Promise<T>;
}

/** The part of a `pg` Pool sluice uses (structural: `pg` stays an optional peer dependency). */
export interface PgPoolLike {
  query(config: { text: string; values: unknown[]; name?: string }): Promise<{ rows: PostgresRow[] }>;
  connect(): Promise<PgPoolClientLike>;
  readonly idleCount: number;
  on?(event: 'error', listener: (error: Error) => void): unknown;
  listenerCount?(event: 'error'): number;
}

/** A connection checked out of a `pg` Pool. */
export interface PgPoolClientLike {
  query(config: { text: string; values: unknown[]; name?: string }): Promise<{ rows: PostgresRow[] }>;
  release(destroy?: boolean | Error): void;
}

/**
 * A postgres.js `sql` instance, as far as the types go: its generics are too rich to restate
 * structurally, so any function with `unsafe` and `begin` is accepted, and
 * `PostgresJsMethods` is what sluice calls.
 */
export interface PostgresJsLike {
  (...args: never[]): unknown;
  unsafe: (...args: never[]) => unknown;
  begin: (...args: never[]) => unknown;
}

/** The postgres.js methods sluice calls, with the signatures it relies on. */
interface PostgresJsMethods {
  unsafe(text: string, values: unknown[], options: { prepare: boolean }): PromiseLike<readonly PostgresRow[]>;
  begin<T>(fn: (sql: PostgresJsMethods) => Promise<T>): PromiseLike<T>;
}

/**
 * Adapts a `pg` Pool. Statements are sent as named prepared statements. A pool without an
 * `error` listener gets a no-op one: `pg` emits `error` when an idle connection dies, and an
 * unhandled `error` event would crash the process; the pool drops that connection by itself.
 *
 * @example
 * import pg from 'pg';
 * const store = new PostgresStore({ client: pgClient(new pg.Pool({ max: 20 })) });
 */
export function pgClient(pool: PgPoolLike): PostgresClient {
  if (typeof pool.on === 'function' && pool.listenerCount?.('error') === 0) pool.on('error', ignore);
  return {
    async query(text, values, name) {
      const deadline = timeLeftOf(values);
      if (deadline === undefined) return (await pool.query({ text, values: values as unknown[], name })).rows;
      // A decision's statement takes its connection itself, so that one whose caller gave up
      // while it waited for a connection (behind a lock, a burst) is dropped, not sent: after a
      // table lock the pool's queue would otherwise replay every dead statement before the live
      // ones.
      const connection = await pool.connect();
      if (deadline.expired()) {
        connection.release();
        throw new SluiceError(
          'SLUICE_STORE_TIMEOUT',
          'the PostgreSQL store dropped a statement whose deadline passed while it waited for a pool connection',
        );
      }
      try {
        const rows = (await connection.query({ text, values: values as unknown[], name })).rows;
        connection.release();
        return rows;
      } catch (error) {
        // An error the server sent (a SQLSTATE: a deadline passed, a constraint) leaves the
        // connection usable, with its prepared statements; any other may have broken it.
        connection.release(hasSqlState(error) ? undefined : true);
        throw error;
      }
    },
    async transaction(fn) {
      const connection = await pool.connect();
      const tx: PostgresQueryable = {
        async query(text, values, name) {
          return (await connection.query({ text, values: values as unknown[], name })).rows;
        },
      };
      try {
        await connection.query({ text: 'BEGIN', values: [] });
        const { commit, value } = await fn(tx);
        await connection.query({ text: commit ? 'COMMIT' : 'ROLLBACK', values: [] });
        connection.release();
        return value;
      } catch (error) {
        // The connection's state is unknown (mid-transaction, or broken): destroy it.
        connection.release(true);
        throw error;
      }
    },
  };
}

/** Thrown inside postgres.js's `begin` to roll back without an error; carries the value. */
class Rollback {
  constructor(readonly value: unknown) {}
}

/**
 * Adapts a postgres.js `sql` instance. Statements are prepared (postgres.js caches them per
 * connection).
 *
 * @example
 * import postgres from 'postgres';
 * const store = new PostgresStore({ client: postgresJsClient(postgres(url, { max: 20 })) });
 */
export function postgresJsClient(instance: PostgresJsLike): PostgresClient {
  const sql = instance as unknown as PostgresJsMethods;
  return {
    async query(text, values) {
      return await sql.unsafe(text, values as unknown[], { prepare: true });
    },
    async transaction<T>(fn: (tx: PostgresQueryable) => Promise<{ commit: boolean; value: T }>) {
      try {
        return await sql.begin(async (inner) => {
          const { commit, value } = await fn({
            async query(text, values) {
              return await inner.unsafe(text, values as unknown[], { prepare: true });
            },
          });
          if (!commit) throw new Rollback(value);
          return value;
        });
      } catch (error) {
        if (error instanceof Rollback) return error.value as T;
        throw error;
      }
    },
  };
}

/**
 * Accepts a {@link PostgresClient}, a `pg` Pool or a postgres.js `sql` instance and returns a
 * {@link PostgresClient}.
 *
 * @throws SluiceError `SLUICE_CONFIG` for anything else (a single `pg` Client included: it
 * cannot run concurrent decisions; pass a Pool)
 * @example toPostgresClient(new pg.Pool())
 */
export function toPostgresClient(value: unknown): PostgresClient {
  const candidate = value as Partial<PostgresClient & PgPoolLike & PostgresJsLike> | null;
  if (typeof value === 'function' && typeof (value as { unsafe?: unknown }).unsafe === 'function') {
    return postgresJsClient(value as unknown as PostgresJsLike);
  }
  if (typeof candidate === 'object' && candidate !== null && typeof candidate.query === 'function') {
    if (typeof candidate.transaction === 'function') return candidate as PostgresClient;
    if (typeof candidate.connect === 'function' && typeof candidate.idleCount === 'number') {
      return pgClient(candidate as PgPoolLike);
    }
  }
  throw configError(
    'PostgresStore client',
    'a pg Pool, a postgres.js sql instance, or a PostgresClient',
    value,
  );
}

function ignore(): void {}
