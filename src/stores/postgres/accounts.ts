import type { BucketTier } from '../../core/rules/rule.js';
import { MAX_COUNT } from '../../core/bounds.js';
import { checkedCallLimit } from './call-tier.js';
import { SluiceError } from '../../core/errors.js';
import type { RuleBuckets } from '../contract/store.js';
import { AccountKeys } from './account-key.js';
import { typeName, userIdText } from './account-id.js';
import { forgetAccountText } from './account-statements.js';
import type { AccountSql, SchemaNames } from './schema-names.js';
import type { PostgresClient } from './client.js';
import { storeError } from './errors.js';
import type { AccountTakeResult, PostgresRuleBuckets } from './rule-buckets.js';

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
  /**
   * A per-call limit: a count for rules that accept one (windows and calendar quotas), or a
   * token bucket's tier (`{ limit, periodMs, burst }`: its rate, period in ms and capacity for
   * this take). @default the rule's own
   */
  limit?: number | BucketTier;
  /**
   * The application's clock (used with `timeSource: "app"` only).
   * @default the limiter's clock when a limiter is passed, otherwise Date.now()
   */
  now?: number;
}

/**
 * The account feature of the PostgreSQL store: account keys, account takes and erasure. Buckets
 * of an account are linked to the user's row through the mapping table, so deleting the user
 * deletes them (see migration-steps.ts). Without the `users` option every method refuses with
 * `SLUICE_CONFIG`.
 */
export class PostgresAccounts {
  /** Reads account keys; undefined without the users option. */
  readonly keys: AccountKeys | undefined;

  constructor(
    private readonly client: PostgresClient,
    private readonly names: SchemaNames,
    /** The users table; undefined without the users option. */
    readonly sql: AccountSql | undefined,
    /** Every table whose rows an account can own. */
    private readonly tables: readonly string[],
  ) {
    this.keys = sql === undefined ? undefined : new AccountKeys();
  }

  /** See {@link PostgresStore.accountKey}. */
  accountKey(userId: string | number | bigint, bucket: string): string {
    const account = this.required('accountKey');
    const id = userIdText(userId, account.type, 'accountKey userId');
    if (typeof bucket !== 'string' || bucket.length === 0)
      throw argumentError('accountKey', 'bucket', 'a non-empty string', bucket);
    return (this.keys as AccountKeys).make(id, bucket);
  }

  /** See {@link PostgresStore.takeForAccount}; `buckets` is already checked to be the store's. */
  take(
    buckets: PostgresRuleBuckets,
    clock: () => number,
    options: AccountTakeOptions,
  ): Promise<AccountTakeResult> {
    const account = this.required('takeForAccount');
    const { userId, accountKey, anonKey, cost = 1, limit } = options;
    const now = options.now === undefined ? clock() : options.now;
    const id = userIdText(userId, account.type, 'takeForAccount userId');
    if (typeof accountKey !== 'string' || accountKey.length === 0)
      throw argumentError('takeForAccount', 'accountKey', 'a non-empty string', accountKey);
    if (typeof anonKey !== 'string' || anonKey.length === 0)
      throw argumentError('takeForAccount', 'anonKey', 'a non-empty string', anonKey);
    if (!Number.isSafeInteger(cost) || cost < 0 || cost > MAX_COUNT)
      throw argumentError('takeForAccount', 'cost', `a whole number from 0 to ${MAX_COUNT}`, cost);
    const tier =
      typeof limit === 'object' ? checkedCallLimit(buckets.rule, limit, 'takeForAccount') : undefined;
    if (
      typeof limit !== 'object' &&
      limit !== undefined &&
      (!buckets.rule.acceptsCallLimit || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_COUNT)
    ) {
      throw argumentError(
        'takeForAccount',
        'limit',
        `a whole number from 1 to ${MAX_COUNT}, for rules that accept a per-call limit`,
        limit,
      );
    }
    if (typeof now !== 'number' || !Number.isFinite(now))
      throw argumentError('takeForAccount', 'now', 'finite ms since the Unix epoch', now);
    return buckets.takeForAccount(
      id,
      accountKey,
      anonKey,
      cost,
      Math.floor(now),
      typeof limit === 'object' ? tier : limit,
    );
  }

  /** See {@link PostgresStore.forgetAccount}. */
  async forget(userId: string | number | bigint): Promise<number> {
    const account = this.required('forgetAccount');
    const id = userIdText(userId, account.type, 'forgetAccount userId');
    try {
      const rows = await this.client.query(forgetAccountText(account, this.names, this.tables), [id], '');
      return (rows[0]?.removed as number | undefined) ?? 0;
    } catch (error) {
      throw storeError(error);
    }
  }

  /** The users table's quoted names, or SLUICE_CONFIG when the store has no `users` option. */
  private required(method: string): AccountSql {
    if (this.sql === undefined) {
      throw new SluiceError(
        'SLUICE_CONFIG',
        `PostgresStore.${method} needs the users option (the users table)`,
      );
    }
    return this.sql;
  }
}

/** SLUICE_ARGUMENT naming the method, the option and the type received: never the value. */
export function argumentError(
  method: string,
  option: string,
  expected: string,
  received: unknown,
): SluiceError {
  return new SluiceError(
    'SLUICE_ARGUMENT',
    `${method} ${option} must be ${expected}; received ${typeName(received)}`,
  );
}

/** The `RuleBuckets` of a limiter or the buckets themselves, and the clock to read `now` from. */
export function accountTarget(limiter: { buckets: RuleBuckets; clock?: () => number } | RuleBuckets): {
  buckets: RuleBuckets;
  clock: () => number;
} {
  if ('buckets' in limiter) {
    const clock = typeof limiter.clock === 'function' ? limiter.clock : Date.now;
    return { buckets: limiter.buckets, clock };
  }
  return { buckets: limiter, clock: Date.now };
}
