import { type Duration } from '../../core/duration.js';
import { type PgPoolLike, type PostgresClient, type PostgresJsLike } from './client.js';
import { type UsersTableOptions } from './schema-names.js';
import { type TimeSource } from '../shared/time-source.js';

/** Options of `PostgresStore`. */
export interface PostgresStoreOptions {
  /** A `pg` Pool, a postgres.js `sql` instance, or any {@link PostgresClient}. Never closed by the store. */
  client: PostgresClient | PgPoolLike | PostgresJsLike;
  /** The schema holding sluice's tables. @default "sluice" */
  schema?: string;
  /**
   * The application's users table, for accounts whose buckets go when the user row goes (`takeForAccount`, `forgetAccount`,
   * and the ON DELETE CASCADE mapping that `migrate()` creates).
   * @default undefined — no account support
   */
  users?: UsersTableOptions;
  /**
   * Whose time decides. `"store"`: PostgreSQL's `statement_timestamp()`, one clock for every
   * node whatever their skew; the `now` a limiter passes is ignored. `"app"`: the `now` the
   * application passes (the limiter's clock), for tests that move a manual clock; every node
   * must then keep good time. (Formerly `clock: "server" | "caller"`, which is now refused.)
   * @default "store"
   */
  timeSource?: TimeSource;
  /**
   * Bound on every decision, from the call to the answer (waiting for a coalesced statement
   * included): past it the take rejects with `SLUICE_STORE_TIMEOUT`. Also set `statement_timeout`
   * on your pool so that the server gives up too (see docs/postgres.md).
   * @default 100
   */
  timeout?: Duration;
  /**
   * Coalescing: at most `inFlight` statements per rule run at once; takes arriving meanwhile
   * share the next statement (up to `maxKeys` distinct keys; takes of one key and cost become one
   * row). `false` sends every take as its own statement.
   * @default { inFlight: 2, maxKeys: 256 }
   */
  batch?: false | { inFlight?: number; maxKeys?: number };
  /**
   * The most statements outstanding at the driver at once: waiting for a pool connection, or
   * running (timed-out ones included, until the driver settles them). Past it a take rejects at
   * once with `SLUICE_STORE_OVERLOADED`, so a hung server or a held lock cannot grow the pool's
   * queue without bound. Coalescing keeps the need low (at most `batch.inFlight` statements per
   * rule); with `batch: false` every concurrent take is a statement.
   * @default 1000
   */
  maxOutstanding?: number;
}

/** Options of {@link PostgresStore.warm}. */
export interface PostgresWarmOptions {
  /** Connections to open and prepare. @default the pool's `max` when the client tells it, else 10 */
  connections?: number;
}

/** Options of {@link PostgresStore.migrate}. */
export interface PostgresMigrateOptions {
  /** See {@link PostgresMigrationOptions.unloggedTokenBuckets}. @default false */
  unloggedTokenBuckets?: boolean;
}

/** Options of {@link PostgresStore.prune}. */
export interface PostgresPruneOptions {
  /** Per-day quota rows (counted before migration 005) whose day is older than this are deleted. @default "90d" */
  olderThan?: Duration;
  /** Rows deleted per statement, so a large prune never holds long locks. @default 10000 */
  batchSize?: number;
}

/** What {@link PostgresStore.prune} deleted. */
export interface PostgresPruneResult {
  /** Per-day quota rows (counted before migration 005) of days older than `olderThan`. */
  readonly quotaRows: number;
  /** Token-bucket rows of bound rules that were full (a full bucket equals a missing one). */
  readonly tokenRows: number;
  /**
   * Rows of window rules and calendar quotas past their horizon (the end of their window; for a
   * sliding window, of the window after it), whatever their rule: from then on they change no
   * decision.
   */
  readonly windowRows: number;
  /** Rows of concurrency limits whose every lease has expired. */
  readonly leaseRows: number;
  /**
   * Resets remembered past their rule's refund horizon (migration 011), after which a refund of a
   * take from before them gives nothing anyway.
   */
  readonly resetRows: number;
}
