import type { BuiltInRule } from '../built-in-rules.js';
import type { Decision } from '../../core/decision.js';
import { parseDuration, parseTimerDuration, type Duration } from '../../core/duration.js';
import { SluiceError, configError } from '../../core/errors.js';
import { checkOptionKeys } from '../../core/options.js';
import type { Rule } from '../../core/rule.js';
import { MAX_COUNT, MAX_TOKEN_RATE } from '../../core/bounds.js';
import { assertDistinctEntries, type RuleBuckets, type Store, type TakeEntry } from '../../store.js';
import { AccountKeys } from './account-key.js';
import { typeName, userIdText } from './account-id.js';
import { BoundedClient, TimeLeft } from './bounded-client.js';
import { checkUsersTable } from './users-table.js';
import {
  toPostgresClient,
  type PgPoolLike,
  type PostgresClient,
  type PostgresJsLike,
  type PostgresRow,
} from './postgres-client.js';
import { quoteIdentifier, userIdType } from './identifier.js';
import { postgresMigrations, schemaNames, type SchemaNames, type UsersTableOptions } from './migrations.js';
import { PostgresRuleBuckets, type AccountTakeResult, type BucketsContext } from './postgres-rule-buckets.js';
import {
  SCALED_EPOCH_MS,
  calendarQuotaStatements,
  tokenBucketStatements,
  takeAllStatement,
  type AccountSql,
  type ClockSource,
  type RuleStatements,
  type Statement,
} from './statements.js';
import { bucketId } from '../shared/bucket-id.js';
import { checkRuleName } from '../shared/rule-name.js';
import { DecisionReplay } from './decisions.js';
import { TIMEOUT_SUBJECT, rethrowMapped, storeError } from './postgres-errors.js';
import { withDeadline } from '../shared/deadline.js';

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
   * Whose clock decides. `"server"`: PostgreSQL's `statement_timestamp()`, one clock for every
   * node whatever their skew; the `now` a limiter passes is ignored. `"caller"`: the `now`
   * passed in, for tests that move a manual clock.
   * @default "server"
   */
  clock?: ClockSource;
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

/** Options of {@link PostgresStore.takeForAccount}. */
export interface AccountTakeOptions {
  /** The user's id as in the users table (`users.id`). */
  userId: string | number | bigint;
  /** The account's pseudonymous bucket key, e.g. `account:v1:<hmac>` (an HMAC of the user id, never the id itself). */
  accountKey: string;
  /** The anonymous (IP) bucket key charged when the user no longer exists. */
  anonKey: string;
  /** @default 1 */
  cost?: number;
  /** A per-call quota limit (calendar quotas only). @default the rule's limit */
  limit?: number;
  /**
   * The caller's clock (used in `clock: "caller"` mode only).
   * @default the limiter's clock when a limiter is passed, otherwise Date.now()
   */
  now?: number;
}

/** The migration that references the users table (see migrations.ts). */
const ACCOUNT_MIGRATION = '003_account_buckets';
const storeKeys = ['client', 'schema', 'users', 'clock', 'timeout', 'batch', 'maxOutstanding'] as const;
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
  private readonly client: PostgresClient;
  private readonly names: SchemaNames;
  private readonly users: UsersTableOptions | undefined;
  private readonly account: AccountSql | undefined;
  private readonly accountKeys: AccountKeys | undefined;
  private readonly context: BucketsContext;
  private readonly token: RuleStatements;
  private readonly quota: RuleStatements;
  private readonly takeAllSql: Statement;
  private readonly rules = new Map<string, PostgresRuleBuckets>();

  constructor(options: PostgresStoreOptions) {
    checkOptionKeys('PostgresStore', options, storeKeys);
    const { schema = 'sluice', clock = 'server', timeout = '100ms', batch = {} } = options;
    const { maxOutstanding = 1000 } = options;
    if (!Number.isSafeInteger(maxOutstanding) || maxOutstanding < 1)
      throw configError('PostgresStore maxOutstanding', 'a positive whole number', maxOutstanding);
    this.client = new BoundedClient(toPostgresClient(options.client), maxOutstanding);
    this.names = schemaNames(schema);
    this.schema = schema;
    if (clock !== 'server' && clock !== 'caller')
      throw configError('PostgresStore clock', '"server" or "caller"', clock);
    const timeoutMs = parseTimerDuration(timeout, 'PostgresStore timeout');
    let inFlight = 0;
    let maxKeys = 1;
    if (batch !== false) {
      checkOptionKeys('PostgresStore batch', batch, batchKeys);
      inFlight = batch.inFlight ?? 2;
      maxKeys = batch.maxKeys ?? 256;
      if (!Number.isSafeInteger(inFlight) || inFlight < 1)
        throw configError('PostgresStore batch.inFlight', 'a positive whole number', inFlight);
      if (!Number.isSafeInteger(maxKeys) || maxKeys < 1)
        throw configError('PostgresStore batch.maxKeys', 'a positive whole number', maxKeys);
    }
    let account: AccountSql | undefined;
    if (options.users !== undefined) {
      const u = options.users;
      checkOptionKeys('PostgresStore users', u, usersKeys);
      account = {
        users: `${quoteIdentifier(u.schema ?? 'public', 'PostgresStore users.schema')}.${quoteIdentifier(u.table ?? 'users', 'PostgresStore users.table')}`,
        column: quoteIdentifier(u.column ?? 'id', 'PostgresStore users.column'),
        type: userIdType(u.type ?? 'bigint', 'PostgresStore users.type'),
      };
      this.users = u;
    }
    this.account = account;
    this.accountKeys = account === undefined ? undefined : new AccountKeys();
    this.timeoutMs = timeoutMs;
    this.context = {
      client: this.client,
      clock,
      timeoutMs,
      inFlight,
      maxKeys,
      accountKeys: this.accountKeys,
    };
    this.token = tokenBucketStatements(this.names, clock, account);
    this.quota = calendarQuotaStatements(this.names, clock, account);
    this.takeAllSql = takeAllStatement(this.names, clock);
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
      throw configError('PostgresStore bind rule', 'a tokenBucket() or calendarQuota() rule', rule);
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
    if (this.account === undefined || this.accountKeys === undefined) {
      throw new SluiceError(
        'SLUICE_CONFIG',
        'PostgresStore.accountKey needs the users option (the users table)',
      );
    }
    const id = userIdText(userId, this.account.type, 'accountKey userId');
    if (typeof bucket !== 'string' || bucket.length === 0)
      throw argument('accountKey', 'bucket', 'a non-empty string', bucket);
    return this.accountKeys.make(id, bucket);
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
      if (this.accountKeys?.parse(entry.key) !== undefined) {
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
    if (this.context.clock === 'caller') values.push(now);
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
      const account = this.accountSql('takeForAccount');
      const buckets = this.bucketsOf('buckets' in limiter ? limiter.buckets : limiter);
      const { userId, accountKey, anonKey, cost = 1, limit } = options;
      const clock = 'clock' in limiter && typeof limiter.clock === 'function' ? limiter.clock : Date.now;
      const now = options.now === undefined ? clock() : options.now;
      const id = userIdText(userId, account.type, 'takeForAccount userId');
      if (typeof accountKey !== 'string' || accountKey.length === 0)
        throw argument('takeForAccount', 'accountKey', 'a non-empty string', accountKey);
      if (typeof anonKey !== 'string' || anonKey.length === 0)
        throw argument('takeForAccount', 'anonKey', 'a non-empty string', anonKey);
      if (!Number.isSafeInteger(cost) || cost < 0 || cost > MAX_COUNT)
        throw argument('takeForAccount', 'cost', `a whole number from 0 to ${MAX_COUNT}`, cost);
      if (
        limit !== undefined &&
        (buckets.kind !== 'calendar-quota' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_COUNT)
      ) {
        throw argument(
          'takeForAccount',
          'limit',
          `a whole number from 1 to ${MAX_COUNT}, for calendar quotas only`,
          limit,
        );
      }
      if (typeof now !== 'number' || !Number.isFinite(now))
        throw argument('takeForAccount', 'now', 'finite ms since the Unix epoch', now);
      return buckets.takeForAccount(id, accountKey, anonKey, cost, Math.floor(now), limit);
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
  async forgetAccount(userId: string | number | bigint): Promise<number> {
    const { users, column, type } = this.accountSql('forgetAccount');
    const id = userIdText(userId, type, 'forgetAccount userId');
    const n = this.names;
    const text = `WITH u AS (SELECT 1 FROM ${users} WHERE ${column} = $1::${type} FOR UPDATE),
m AS (SELECT bucket FROM ${n.accountBuckets} WHERE user_id = $1::${type} AND EXISTS (SELECT 1 FROM u)),
q AS (DELETE FROM ${n.quotaCounters} WHERE account_bucket IN (SELECT bucket FROM m) RETURNING 1),
t AS (DELETE FROM ${n.tokenBuckets} WHERE account_bucket IN (SELECT bucket FROM m) RETURNING 1),
d AS (DELETE FROM ${n.accountBuckets} WHERE bucket IN (SELECT bucket FROM m))
SELECT ((SELECT count(*) FROM q) + (SELECT count(*) FROM t))::float8 AS removed`;
    try {
      const rows = await this.client.query(text, [id], '');
      return (rows[0]?.removed as number | undefined) ?? 0;
    } catch (error) {
      throw storeError(error);
    }
  }

  /** The users table's quoted names, or SLUICE_CONFIG when the store has no `users` option. */
  private accountSql(method: string): AccountSql {
    if (this.account === undefined) {
      throw new SluiceError(
        'SLUICE_CONFIG',
        `PostgresStore.${method} needs the users option (the users table)`,
      );
    }
    return this.account;
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
      throw configError('prune batchSize', 'a positive whole number', batchSize);
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

/** SLUICE_ARGUMENT naming the method, the option and the type received: never the value. */
function argument(method: string, option: string, expected: string, received: unknown): SluiceError {
  return new SluiceError(
    'SLUICE_ARGUMENT',
    `${method} ${option} must be ${expected}; received ${typeName(received)}`,
  );
}
