import type { BuiltInRule } from '../built-in-rules.js';
import type { Decision } from '../../core/decision.js';
import { parseDuration, parseTimerDuration, type Duration } from '../../core/duration.js';
import { SluiceError, optionError } from '../../core/errors.js';
import { checkOptionKeys } from '../../core/options.js';
import type { Rule } from '../../core/rule.js';
import { MAX_TOKEN_RATE } from '../../core/bounds.js';
import { assertDistinctEntries, type RuleBuckets, type Store, type TakeEntry } from '../../store.js';
import { PostgresAccounts, accountTarget, type AccountTakeOptions } from './accounts.js';
import { accountSqlOf, type AccountSql } from './account-statements.js';
import { BoundedClient, TimeLeft } from './bounded-client.js';
import { checkUsersTable } from './users-table.js';
import {
  toPostgresClient,
  type PgPoolLike,
  type PostgresClient,
  type PostgresJsLike,
  type PostgresRow,
} from './postgres-client.js';
import { postgresMigrations, schemaNames, type SchemaNames, type UsersTableOptions } from './migrations.js';
import { PostgresRuleBuckets, type AccountTakeResult, type BucketsContext } from './postgres-rule-buckets.js';
import {
  SCALED_EPOCH_MS,
  calendarQuotaStatements,
  tokenBucketStatements,
  takeAllStatement,
  type RuleStatements,
  type Statement,
} from './statements.js';
import { bucketId } from '../shared/bucket-id.js';
import { checkRuleName } from '../shared/rule-name.js';
import { DecisionReplay } from './decisions.js';
import { TIMEOUT_SUBJECT, rethrowMapped, storeError } from './postgres-errors.js';
import { withDeadline } from '../shared/deadline.js';
import { readTimeSource, type TimeSource } from '../shared/time-source.js';

export type { AccountTakeOptions } from './accounts.js';

/** Options of {@link PostgresStore}. */
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

/** Options of {@link PostgresStore.migrate}. */
export interface PostgresMigrateOptions {
  /** See {@link PostgresMigrationOptions.unloggedTokenBuckets}. @default false */
  unloggedTokenBuckets?: boolean;
}

/** Options of {@link PostgresStore.prune}. */
export interface PostgresPruneOptions {
  /** Quota rows whose day is older than this are deleted. @default "90d" */
  olderThan?: Duration;
  /** Rows deleted per statement, so a large prune never holds long locks. @default 10000 */
  batchSize?: number;
}

/** What {@link PostgresStore.prune} deleted. */
export interface PostgresPruneResult {
  /** Quota rows of days older than `olderThan`. */
  readonly quotaRows: number;
  /** Token-bucket rows of bound rules that were full (a full bucket equals a missing one). */
  readonly tokenRows: number;
}

/** The migration that references the users table (see migrations.ts). */
const ACCOUNT_MIGRATION = '003_account_buckets';
const storeKeys = ['client', 'schema', 'users', 'timeSource', 'timeout', 'batch', 'maxOutstanding'] as const;
const batchKeys = ['inFlight', 'maxKeys'] as const;
const usersKeys = ['schema', 'table', 'column', 'type'] as const;

/**
 * Buckets in PostgreSQL: one atomic statement per decision, decided on the server's clock,
 * daily rows for quotas, pruning as a growth bound, and account erasure (deleting a
 * user cascades to all its buckets, across secret generations). Run `migrate()` once.
 *
 * @example
 * const store = new PostgresStore({ client: new pg.Pool({ max: 20 }), users: { table: 'users' } });
 * await store.migrate();
 * const reports = createLimiter({ name: 'reports', rule: calendarQuota({ limit: 10 }), store });
 */
export class PostgresStore implements Store {
  readonly kind = 'postgres';
  /** The schema holding the tables. */
  readonly schema: string;
  /** Every call is bounded by this many ms (the `timeout` option); limiters add no timer of their own. */
  readonly timeoutMs: number;
  /** Whose time decides (the `timeSource` option). */
  readonly timeSource: TimeSource;
  private readonly client: PostgresClient;
  private readonly names: SchemaNames;
  private readonly users: UsersTableOptions | undefined;
  private readonly accounts: PostgresAccounts;
  private readonly context: BucketsContext;
  private readonly token: RuleStatements;
  private readonly quota: RuleStatements;
  private readonly takeAllSql: Statement;
  private readonly rules = new Map<string, PostgresRuleBuckets>();

  constructor(options: PostgresStoreOptions) {
    // Before the key check, so that the former `clock` option is refused with its new spelling.
    const timeSource = readTimeSource('PostgresStore', options);
    checkOptionKeys('PostgresStore', options, storeKeys);
    const { schema = 'sluice', timeout = '100ms', batch = {} } = options;
    const { maxOutstanding = 1000 } = options;
    if (!Number.isSafeInteger(maxOutstanding) || maxOutstanding < 1)
      throw optionError('PostgresStore maxOutstanding', 'a positive whole number');
    this.client = new BoundedClient(toPostgresClient(options.client), maxOutstanding);
    this.names = schemaNames(schema);
    this.schema = schema;
    this.timeSource = timeSource;
    const timeoutMs = parseTimerDuration(timeout, 'PostgresStore timeout');
    let inFlight = 0;
    let maxKeys = 1;
    if (batch !== false) {
      checkOptionKeys('PostgresStore batch', batch, batchKeys);
      inFlight = batch.inFlight ?? 2;
      maxKeys = batch.maxKeys ?? 256;
      if (!Number.isSafeInteger(inFlight) || inFlight < 1)
        throw optionError('PostgresStore batch.inFlight', 'a positive whole number');
      if (!Number.isSafeInteger(maxKeys) || maxKeys < 1)
        throw optionError('PostgresStore batch.maxKeys', 'a positive whole number');
    }
    let account: AccountSql | undefined;
    if (options.users !== undefined) {
      const u = options.users;
      checkOptionKeys('PostgresStore users', u, usersKeys);
      account = accountSqlOf(u);
      this.users = u;
    }
    this.accounts = new PostgresAccounts(this.client, this.names, account, [
      this.names.quotaCounters,
      this.names.tokenBuckets,
    ]);
    this.timeoutMs = timeoutMs;
    this.context = {
      client: this.client,
      timeSource,
      timeoutMs,
      inFlight,
      maxKeys,
      accountKeys: this.accounts.keys,
    };
    this.token = tokenBucketStatements(this.names, timeSource, account);
    this.quota = calendarQuotaStatements(this.names, timeSource, account);
    this.takeAllSql = takeAllStatement(this.names, timeSource);
  }

  bind(name: string, bound: Rule): PostgresRuleBuckets {
    checkRuleName(name, 'PostgresStore rule name');
    if (this.rules.has(name)) {
      throw new SluiceError(
        'SLUICE_CONFIG',
        `a rule named ${JSON.stringify(name)} is already bound to this PostgresStore; every limit needs its own name`,
      );
    }
    let buckets: PostgresRuleBuckets;
    const rule = bound as BuiltInRule;
    if (rule.kind === 'token-bucket') {
      // Reduce limit/period by their gcd: the same exact arithmetic in smaller integers.
      const g = gcd(rule.limit, rule.periodMs);
      const rate = rule.limit / g;
      const unit = rule.periodMs / g;
      // The rules sluice builds never exceed it (their limit is at most MAX_TOKEN_RATE); a rule
      // built elsewhere must not overflow the bigint scaled time either.
      if (rate > MAX_TOKEN_RATE) {
        throw new SluiceError(
          'SLUICE_CONFIG',
          `tokenBucket ${JSON.stringify(name)}: limit/period reduces to ${rate} scaled units per ms, more than the ${MAX_TOKEN_RATE} (MAX_TOKEN_RATE) PostgreSQL's 64-bit scaled time can count exactly until 2300; use a coarser limit or period`,
        );
      }
      buckets = new PostgresRuleBuckets(
        name,
        rule,
        this.context,
        this.token,
        [name, rate, unit, rule.burst * unit, rule.penalty],
        g,
      );
    } else if (rule.kind === 'calendar-quota') {
      // PostgreSQL counts calendar quotas per day only, for now: a quota per hour, week or month
      // would otherwise be counted per day without a word.
      if (rule.per !== 'day') {
        throw new SluiceError(
          'SLUICE_CONFIG',
          'PostgresStore rule: a calendarQuota counted per hour, week or month is not supported by PostgresStore yet; use per: "day", or the memory store',
        );
      }
      buckets = new PostgresRuleBuckets(
        name,
        rule,
        this.context,
        this.quota,
        [name, rule.timeZone, rule.penalty],
        1,
      );
    } else {
      throw optionError('PostgresStore bind rule', 'a tokenBucket() or calendarQuota() rule');
    }
    this.rules.set(name, buckets);
    return buckets;
  }

  /**
   * Frees `name`: it may be bound again, and calls on the freed buckets reject with
   * `SLUICE_CONFIG`. The rows stay in PostgreSQL (other nodes may still use the rule) and are
   * pruned as usual.
   */
  unbind(name: string): void {
    this.rules.get(name)?.release();
    this.rules.delete(name);
  }

  /**
   * The key under which a limiter charges an account's bucket so that the row is linked to the
   * user and erased with the user, as `takeForAccount` does: return it from a route's
   * key step, e.g. `resolveIdentity`'s `accountBucket`. The store writes `bucket` (the
   * pseudonymous key) alone; the user id only links the row. A take whose user was deleted
   * meanwhile is decided on `bucket` and writes nothing. Not accepted by `takeAll`.
   *
   * @throws SluiceError `SLUICE_CONFIG` without the `users` option; `SLUICE_ARGUMENT` for an id
   * that is not of the users table's id type, or an empty bucket
   * @example accountBucket: (userId) => store.accountKey(userId, accounts.current(userId))
   */
  accountKey(userId: string | number | bigint, bucket: string): string {
    return this.accounts.accountKey(userId, bucket);
  }

  /**
   * All or nothing in one statement: every entry's row is locked and decided, and written
   * only when all admit. Retried when a missing row appeared concurrently (see
   * `takeAllStatement`). Penalties do not apply: a refused all-or-nothing take charges nothing.
   */
  async takeAll(entries: readonly TakeEntry[], now: number): Promise<Decision[]> {
    assertDistinctEntries(entries);
    const t: unknown[][] = [[], [], [], [], [], [], []];
    const q: unknown[][] = [[], [], [], [], [], []];
    const bound: PostgresRuleBuckets[] = [];
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as TakeEntry;
      const buckets = this.bucketsOf(entry.buckets);
      if (this.accounts.keys?.parse(entry.key) !== undefined) {
        throw new SluiceError(
          'SLUICE_ARGUMENT',
          `an all-or-nothing take cannot charge an account key (rule ${JSON.stringify(buckets.name)}); take it on its own`,
        );
      }
      bound.push(buckets);
      const p = buckets.params;
      const rule = buckets.rule as BuiltInRule;
      if (rule.kind === 'token-bucket') {
        const row = [i + 1, buckets.name, bucketId(entry.key), entry.cost, p[1], p[2], p[3]];
        for (let c = 0; c < 7; c++) (t[c] as unknown[]).push(row[c]);
      } else {
        const row = [
          i + 1,
          buckets.name,
          bucketId(entry.key),
          entry.cost,
          entry.limit ?? rule.limit,
          rule.timeZone,
        ];
        for (let c = 0; c < 6; c++) (q[c] as unknown[]).push(row[c]);
      }
    }
    const values: unknown[] = [...t, ...q];
    if (this.timeSource === 'app') values.push(now);
    values.push(new TimeLeft(performance.now() + this.context.timeoutMs));
    const { text, name } = this.takeAllSql;
    const rows = await withDeadline(
      this.retrying(text, values, name).catch(rethrowMapped),
      this.context.timeoutMs,
      TIMEOUT_SUBJECT,
    );
    const decisions = new Array<Decision>(entries.length);
    for (const row of rows) {
      const index = (row.ord as number) - 1;
      const entry = entries[index] as TakeEntry;
      const buckets = bound[index] as PostgresRuleBuckets;
      const replay = new DecisionReplay(buckets.rule, buckets.name, buckets.scale);
      replay.start(row);
      decisions[index] = replay.next(entry.cost, entry.limit);
    }
    return decisions;
  }

  /**
   * Charges the account's bucket when the user still exists, otherwise the
   * anonymous bucket, in one statement that locks the user's row. A concurrent deletion of the
   * user either waits for this statement and then deletes what it wrote (cascade), or ran first,
   * and the take falls back to `anonKey`. Never an orphan row.
   *
   * @example
   * const { mode, decision } = await store.takeForAccount(reports, {
   *   userId: session.userId, accountKey: pseudonymousKey(...), anonKey: ipKey });
   * response.setHeader('X-Auth-Mode', mode);
   */
  takeForAccount(
    limiter: { buckets: RuleBuckets; clock?: () => number } | RuleBuckets,
    options: AccountTakeOptions,
  ): Promise<AccountTakeResult> {
    try {
      const target = accountTarget(limiter);
      return this.accounts.take(this.bucketsOf(target.buckets), target.clock, options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Deletes every bucket row linked to `userId` (all rules, all secret generations) and its
   * mappings; returns the number of bucket rows deleted. An app's delete-the-user path (see examples/reports) calls it
   * before deleting the user, for its result count; the user's deletion cascades anyway, so this
   * is never what erasure depends on. Locks the user's row, so it serialises with account takes.
   *
   * @example const removed = await store.forgetAccount(user.id);
   */
  forgetAccount(userId: string | number | bigint): Promise<number> {
    return this.accounts.forget(userId);
  }

  /**
   * Retention as a growth bound (e.g. weekly, keeping 90 days): deletes quota rows whose day is
   * older than `olderThan`, and token-bucket rows of bound rules that are full again (they say
   * nothing a missing row does not). Not a compliance deadline: a late or failed run keeps rows
   * longer; erasure of an account is `forgetAccount` / deleting the user, never this.
   *
   * @example await store.prune({ olderThan: '90d' }); // e.g. from a weekly cron
   */
  async prune(options: PostgresPruneOptions = {}): Promise<PostgresPruneResult> {
    checkOptionKeys('PostgresStore prune', options, ['olderThan', 'batchSize']);
    const olderThanMs = parseDuration(options.olderThan ?? '90d', 'prune olderThan');
    const batchSize = options.batchSize ?? 10_000;
    if (!Number.isSafeInteger(batchSize) || batchSize < 1)
      throw optionError('PostgresStore prune batchSize', 'a positive whole number');
    const n = this.names;
    const now = `floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint`;
    const quotaText = `DELETE FROM ${n.quotaCounters} WHERE ctid IN (
  SELECT ctid FROM ${n.quotaCounters}
  WHERE day < ((timestamptz 'epoch' + (${now} - $1::bigint)::float8 * interval '1 millisecond') AT TIME ZONE 'UTC')::date
  LIMIT $2)`;
    const tokenText = `DELETE FROM ${n.tokenBuckets} WHERE ctid IN (
  SELECT ctid FROM ${n.tokenBuckets} WHERE rule = $1 AND tat <= (${now} - ${SCALED_EPOCH_MS}) * $2::bigint LIMIT $3)`;
    try {
      const quotaRows = await this.deleteInBatches(
        `WITH d AS (${quotaText} RETURNING 1) SELECT count(*)::float8 AS n FROM d`,
        [olderThanMs, batchSize],
        batchSize,
      );
      let tokenRows = 0;
      for (const buckets of this.rules.values()) {
        const rule = buckets.rule as BuiltInRule;
        if (rule.kind !== 'token-bucket') continue;
        const rate = rule.limit / gcd(rule.limit, rule.periodMs);
        tokenRows += await this.deleteInBatches(
          `WITH d AS (${tokenText} RETURNING 1) SELECT count(*)::float8 AS n FROM d`,
          [buckets.name, rate, batchSize],
          batchSize,
        );
      }
      return { quotaRows, tokenRows };
    } catch (error) {
      throw storeError(error);
    }
  }

  /**
   * Creates or updates the schema: applies the migrations of {@link postgresMigrations} that are
   * missing, in one transaction under an advisory lock (several nodes may call it at start-up).
   * Returns the names of the migrations applied.
   *
   * @example await store.migrate();
   */
  async migrate(options: PostgresMigrateOptions = {}): Promise<string[]> {
    checkOptionKeys('PostgresStore migrate', options, ['unloggedTokenBuckets']);
    const n = this.names;
    const migrations = postgresMigrations({
      schema: this.schema,
      users: this.users,
      unloggedTokenBuckets: options.unloggedTokenBuckets === true,
    });
    try {
      return await this.client.transaction(async (tx) => {
        await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`sluice:migrate:${this.schema}`], '');
        await tx.query(`CREATE SCHEMA IF NOT EXISTS ${n.schema}`, [], '');
        await tx.query(
          `CREATE TABLE IF NOT EXISTS ${n.migrations} (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
          [],
          '',
        );
        const done = new Set(
          (await tx.query(`SELECT name FROM ${n.migrations}`, [], '')).map((r) => r.name as string),
        );
        const applied: string[] = [];
        for (const migration of migrations) {
          if (done.has(migration.name)) continue;
          if (migration.name === ACCOUNT_MIGRATION && this.users !== undefined)
            await checkUsersTable(tx, this.users);
          for (const sql of migration.statements) await tx.query(sql, [], '');
          await tx.query(`INSERT INTO ${n.migrations} (name) VALUES ($1)`, [migration.name], '');
          applied.push(migration.name);
        }
        return { commit: true, value: applied };
      });
    } catch (error) {
      throw storeError(error);
    }
  }

  /** The store owns no connection: closing the client is the caller's business. */
  async close(): Promise<void> {}

  /** Runs a statement, again when PostgreSQL asks for a retry (40001) or broke a deadlock (40P01). */
  private async retrying(text: string, values: unknown[], name: string): Promise<readonly PostgresRow[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.client.query(text, values, name);
      } catch (error) {
        const code = (error as { code?: unknown } | null)?.code;
        if (attempt >= 20 || (code !== '40001' && code !== '40P01')) throw error;
      }
    }
  }

  private async deleteInBatches(text: string, values: unknown[], batchSize: number): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = ((await this.client.query(text, values, ''))[0]?.n as number | undefined) ?? 0;
      total += deleted;
      if (deleted < batchSize) return total;
    }
  }

  private bucketsOf(buckets: RuleBuckets): PostgresRuleBuckets {
    if (!(buckets instanceof PostgresRuleBuckets) || this.rules.get(buckets.name) !== buckets) {
      throw new SluiceError(
        'SLUICE_CONFIG',
        `rule ${JSON.stringify(buckets.name)} is not bound to this PostgresStore`,
      );
    }
    return buckets;
  }
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
