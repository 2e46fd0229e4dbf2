import type { Decision } from '../../core/decision.js';
import type {
  PostgresStoreOptions,
  PostgresWarmOptions,
  PostgresMigrateOptions,
  PostgresPruneOptions,
  PostgresPruneResult,
} from './store-options.js';
import { parseDuration, parseTimerDuration } from '../../core/duration.js';
import { SluiceError, optionError } from '../../core/errors.js';
import { checkOptionKeys } from '../../core/options.js';
import type { Rule } from '../../core/rules/rule.js';
import { promised } from '../contract/bucket-steps.js';
import { assertDistinctEntries, type RuleBuckets, type Store, type TakeEntry } from '../contract/store.js';
import { PostgresAccounts, accountTarget, type AccountTakeOptions } from './accounts.js';
import { BoundedClient } from './bounded-client.js';
import { checkUsersTable } from './users-table.js';
import { toPostgresClient } from './client.js';
import { postgresMigrations } from './migrations.js';
import {
  accountSqlOf,
  schemaNames,
  type AccountSql,
  type SchemaNames,
  type UsersTableOptions,
} from './schema-names.js';
import { storeNow } from './sql-clock.js';
import { PostgresRuleBuckets, type AccountTakeResult, type BucketsContext } from './rule-buckets.js';
import { ruleStatements, type RuleStatements } from './statements.js';
import { assertNameFree, checkRuleName } from '../shared/rule-name.js';
import { storeError } from './errors.js';
import {
  algorithmOf,
  lockoutBinding,
  lockoutRuleSql,
  windowPruneText,
  type AlgorithmModule,
} from './algorithms/index.js';
import { AllOrNothing } from './all-or-nothing.js';
import { StoreTime } from './store-time.js';
import { readTimeSource, type TimeSource } from '../shared/time-source.js';
import { checkLeaseGroup, type LeaseStore } from '../contract/lease-store.js';
import { PostgresLeaseBuckets, leaseStatements, type LeaseContext } from './lease-buckets.js';

export type { AccountTakeOptions } from './accounts.js';

export type * from './store-options.js';

/** The migration that references the users table (see migration-steps.ts). */
const ACCOUNT_MIGRATION = '003_account_buckets';
const storeKeys = ['client', 'schema', 'users', 'timeSource', 'timeout', 'batch', 'maxOutstanding'] as const;
const batchKeys = ['inFlight', 'maxKeys'] as const;
const usersKeys = ['schema', 'table', 'column', 'type'] as const;

/**
 * Buckets in PostgreSQL: one atomic statement per decision, decided on the server's clock, every
 * built-in rule (token bucket, fixed and sliding window, calendar quota of any period in any
 * zone; one module per algorithm, found by the rule's kind), pruning as a growth bound, and account erasure (deleting a
 * user cascades to all its buckets, across secret generations). Run `migrate()` once.
 *
 * @example
 * const store = new PostgresStore({ client: new pg.Pool({ max: 20 }), users: { table: 'users' } });
 * await store.migrate();
 * const reports = createLimiter({ name: 'reports', rule: calendarQuota({ limit: 10 }), store });
 */
export class PostgresStore implements Store, LeaseStore {
  readonly kind = 'postgres';
  /** The schema holding the tables. */
  readonly schema: string;
  /** Every call is bounded by this many ms (the `timeout` option); limiters add no timer of their own. */
  readonly timeoutMs: number;
  /** Statements PostgreSQL answered so far, late ones included: a breaker's sign that it answers. */
  get replies(): number {
    return this.client.replies;
  }
  /** Whose time decides (the `timeSource` option). */
  readonly timeSource: TimeSource;
  private readonly client: BoundedClient;
  private readonly names: SchemaNames;
  private readonly users: UsersTableOptions | undefined;
  private readonly accounts: PostgresAccounts;
  private readonly context: BucketsContext;
  private readonly account: AccountSql | undefined;
  /** Each algorithm's statements, made when a rule of its kind is first bound. */
  private readonly statements = new Map<AlgorithmModule, RuleStatements>();
  /** Each algorithm's statements for rules with a lockout (the `block` option). */
  private readonly lockoutStatements = new Map<AlgorithmModule, RuleStatements>();
  private readonly allOrNothing: AllOrNothing;
  private readonly rules = new Map<string, PostgresRuleBuckets>();
  private readonly modules = new Map<PostgresRuleBuckets, AlgorithmModule>();
  private readonly leaseGroups = new Map<string, PostgresLeaseBuckets>();
  private leaseContext: LeaseContext | undefined;
  /** The pool's size when the client tells it (`pg` and postgres.js do), for `warm()`. */
  private readonly poolSize: number;

  constructor(options: PostgresStoreOptions) {
    // Before the key check, so that the former `clock` option is refused with its new spelling.
    const timeSource = readTimeSource('PostgresStore', options);
    checkOptionKeys('PostgresStore', options, storeKeys);
    const { schema = 'sluice', timeout = '100ms', batch = {} } = options;
    const { maxOutstanding = 1000 } = options;
    if (!Number.isSafeInteger(maxOutstanding) || maxOutstanding < 1)
      throw optionError('PostgresStore maxOutstanding', 'a positive whole number');
    this.client = new BoundedClient(toPostgresClient(options.client), maxOutstanding);
    this.poolSize = poolSizeOf(options.client);
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
      account = accountSqlOf(u, 'PostgresStore ');
      this.users = u;
    }
    this.account = account;
    this.accounts = new PostgresAccounts(this.client, this.names, account, [
      this.names.quotaCounters,
      this.names.tokenBuckets,
      this.names.windowCounters,
    ]);
    const storeTime = new StoreTime(timeSource);
    this.timeoutMs = timeoutMs;
    this.context = {
      client: this.client,
      replies: this.client,
      timeSource,
      timeoutMs,
      inFlight,
      maxKeys,
      accountKeys: this.accounts.keys,
      storeTime,
    };
    this.allOrNothing = new AllOrNothing(
      this.client,
      this.names,
      timeSource,
      storeTime,
      timeoutMs,
      this.accounts.keys,
    );
  }

  bind(name: string, bound: Rule): PostgresRuleBuckets {
    checkRuleName(name, 'PostgresStore rule name');
    assertNameFree('PostgresStore', name, this.rules, this.leaseGroups);
    const module = algorithmOf(bound);
    const block = bound.block;
    let binding = module.bind(name, bound);
    if (block !== undefined) binding = lockoutBinding(binding, block);
    const cache = block === undefined ? this.statements : this.lockoutStatements;
    let statements = cache.get(module);
    if (statements === undefined) {
      const sql = module.ruleSql(this.names);
      const text = block === undefined ? sql : lockoutRuleSql(sql);
      const reserveSql = block === undefined ? module.reserveSql?.(this.names) : undefined;
      // The lean take has no lockout columns: a rule with a lockout uses the take statement.
      const plainTakeSql = block === undefined ? module.plainTakeSql : undefined;
      statements = ruleStatements(text, this.names, this.timeSource, this.account, reserveSql, plainTakeSql);
      cache.set(module, statements);
    }
    const buckets = new PostgresRuleBuckets(name, bound, this.context, statements, binding);
    this.modules.set(buckets, module);
    this.rules.set(name, buckets);
    return buckets;
  }

  /**
   * Binds a lease group (see `concurrencyLimit`): per key a row of the leases held (the `leases`
   * table of migration 008), acquired and released in one statement each (see lease-buckets.ts).
   */
  bindLeases(name: string, max: number, ttlMs: number): PostgresLeaseBuckets {
    checkRuleName(name, 'PostgresStore lease group name');
    checkLeaseGroup('PostgresStore', max, ttlMs);
    assertNameFree('PostgresStore', name, this.rules, this.leaseGroups);
    this.leaseContext ??= {
      client: this.client,
      timeSource: this.timeSource,
      timeoutMs: this.timeoutMs,
      statements: leaseStatements(this.names, this.timeSource),
      holds: (group) => this.leaseGroups.get(group.name) === group,
    };
    const group = new PostgresLeaseBuckets(this.leaseContext, name, max, ttlMs);
    this.leaseGroups.set(name, group);
    return group;
  }

  /**
   * Frees `name`: it may be bound again, and calls on the freed buckets reject with
   * `SLUICE_CONFIG`. The rows stay in PostgreSQL (other nodes may still use the rule) and are
   * pruned as usual.
   */
  unbind(name: string): void {
    this.leaseGroups.delete(name);
    const buckets = this.rules.get(name);
    if (buckets === undefined) return;
    buckets.release();
    this.rules.delete(name);
    this.modules.delete(buckets);
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
    const bound = entries.map((entry) => this.bucketsOf(entry.buckets));
    const modules = bound.map((buckets) => this.modules.get(buckets) as AlgorithmModule);
    return this.allOrNothing.take(entries, bound, modules, now);
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
    return promised(this, this.takeForAccountTarget, limiter, options);
  }

  private takeForAccountTarget(
    limiter: Parameters<typeof accountTarget>[0],
    options: AccountTakeOptions,
  ): Promise<AccountTakeResult> {
    const target = accountTarget(limiter);
    return this.accounts.take(this.bucketsOf(target.buckets), target.clock, options);
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
   * Retention as a growth bound (e.g. weekly): deletes the rows of window rules and calendar
   * quotas past their horizon (they change no decision any more), per-day quota rows counted
   * before migration 005 whose day is older than `olderThan`, and rows of bound rules that are as
   * good as new (full token buckets: they say nothing a missing row does not). Not a compliance deadline: a late or failed run keeps rows
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
    const quotaText = `DELETE FROM ${n.quotaCounters} WHERE ctid IN (
  SELECT ctid FROM ${n.quotaCounters}
  WHERE day < ((timestamptz 'epoch' + (${storeNow} - $1::bigint)::float8 * interval '1 millisecond') AT TIME ZONE 'UTC')::date
  LIMIT $2)`;
    try {
      const quotaRows = await this.deleteInBatches(
        `WITH d AS (${quotaText} RETURNING 1) SELECT count(*)::float8 AS n FROM d`,
        [olderThanMs, batchSize],
        batchSize,
      );
      const windowRows = await this.deleteInBatches(windowPruneText(n), [batchSize], batchSize);
      let tokenRows = 0;
      for (const buckets of this.rules.values()) {
        const step = buckets.binding.prune?.(n, batchSize);
        if (step !== undefined)
          tokenRows += await this.deleteInBatches(step.text, [...step.values], batchSize);
      }
      const leaseRows = await this.deleteInBatches(expiredRowsText(n.leases), [batchSize], batchSize);
      const resetRows = await this.deleteInBatches(expiredRowsText(n.resets), [batchSize], batchSize);
      return { quotaRows, tokenRows, windowRows, leaseRows, resetRows };
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
      quotaTimeZones: this.quotaTimeZones(),
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

  /**
   * The zone of every daily calendar quota bound to this store, by rule name: the days in which
   * migration 010 carries the rows counted before the window table.
   */
  private quotaTimeZones(): Record<string, string> {
    const zones: Record<string, string> = {};
    for (const [name, buckets] of this.rules) {
      const zone = buckets.binding.carriedTimeZone;
      if (zone !== undefined) zones[name] = zone;
    }
    return zones;
  }

  /**
   * Warms the pool and the statements before the first decisions, charging nothing: for every
   * rule bound so far, runs its take statements on `connections` connections at once (so the pool
   * opens them, and each prepares the statements), each rolled back by its deadline check. Call
   * it after binding the rules and before taking traffic (the server does, before it prints its
   * address): cold connections and unprepared statements otherwise make the first decisions
   * under load time out. Fails with the store's error when the schema is missing.
   *
   * @param options.connections how many connections to warm; @default the pool's `max` when the
   *   client tells it (a `pg` Pool, a postgres.js instance), else 10
   * @example await store.migrate(); const api = createLimiter({ ..., store }); await store.warm();
   */
  async warm(options: PostgresWarmOptions = {}): Promise<void> {
    checkOptionKeys('PostgresStore warm', options, ['connections']);
    const { connections = this.poolSize } = options;
    if (!Number.isSafeInteger(connections) || connections < 1 || connections > 1000)
      throw optionError('PostgresStore warm connections', 'a whole number from 1 to 1000');
    for (const buckets of this.rules.values()) await buckets.warm(connections, Date.now());
  }

  /** The store owns no connection: closing the client is the caller's business. */
  async close(): Promise<void> {}

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

/** A `pg` Pool's or a postgres.js instance's `max` connections, when it says; otherwise 10. */
function poolSizeOf(client: unknown): number {
  const max = (client as { options?: { max?: unknown } } | null)?.options?.max;
  return typeof max === 'number' && Number.isSafeInteger(max) && max >= 1 && max <= 1000 ? max : 10;
}

/** Deletes up to `$1` rows of `table` past their `expires_at`, and counts them. */
function expiredRowsText(table: string): string {
  return `WITH d AS (DELETE FROM ${table} WHERE ctid IN (SELECT ctid FROM ${table} WHERE expires_at <= ${storeNow} LIMIT $1) RETURNING 1) SELECT count(*)::float8 AS n FROM d`;
}
