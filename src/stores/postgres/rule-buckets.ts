import type { Decision } from '../../core/decision.js';
import type { CallLimit, Rule } from '../../core/rules/rule.js';
import type { BucketAdjustment, RuleBuckets } from '../contract/store.js';
import { bucketId } from '../shared/bucket-id.js';
import type { PostgresClient, PostgresQueryable, PostgresRow } from './client.js';
import { DecisionReplay } from './decisions.js';
import {
  Coalescer,
  type BatchTime,
  type CoalescerLimits,
  type TakeBatch,
  type TakeGroup,
} from './coalescer.js';
import type { RuleStatements } from './statements.js';
import type { Statement } from './statement.js';
import { stalePeriodsAt, type AlgorithmBinding } from './algorithms/index.js';
import type { StoreTime } from './store-time.js';
import {
  TIMEOUT_SUBJECT,
  lockoutStoreError,
  rethrowMapped,
  storeError,
  type PostgresStoreError,
} from './errors.js';
import { withDeadline } from '../shared/deadline.js';
import type { AccountKeys } from './account-key.js';
import { OffsetAtSend, SpentTimeLeft, TimeLeft } from './bounded-client.js';
import { SluiceError } from '../../core/errors.js';
import { checkReservation, reserverOf } from '../../core/reservation.js';
import { checkedCallLimit } from './call-tier.js';
import { refundHorizonMs } from '../shared/refund-horizon.js';

/** The per-take values of an algorithm without per-take columns of its own. */
const NO_VALUES: readonly unknown[] = [];

/** What a rule's buckets share with their store (their coalescer's limits included). */
export interface BucketsContext extends CoalescerLimits {
  readonly client: PostgresClient;
  /** The time statements are expected to decide at (for parameters that depend on it). */
  readonly storeTime: StoreTime;
  /** Reads account keys (see `PostgresStore.accountKey`); undefined without the users option. */
  readonly accountKeys: AccountKeys | undefined;
}

/** The outcome of an account take: which bucket was charged, and its decision. */
export interface AccountTakeResult {
  /** `"session"` when the user still exists, `"anon"` when the take fell back to the IP bucket. */
  readonly mode: 'session' | 'anon';
  readonly decision: Decision;
}

/**
 * One rule's buckets in a {@link PostgresStore}. A take is one statement, shared with the rule's
 * other takes while its statements are in flight (see `Coalescer` in coalescer.ts); refunds, resets,
 * reservations and account takes are statements of their own.
 */
export class PostgresRuleBuckets implements RuleBuckets {
  readonly kind: string;
  /** False once the store unbound the rule's name: every later call is refused. */
  private bound = true;
  /** How long the resets table remembers a reset of this rule (see `refundHorizonMs`). */
  private readonly horizonMs: number;
  /** How a take's driver error reads: a rule with a lockout names its columns when they are missing. */
  private readonly takeError: (error: unknown) => PostgresStoreError;
  private readonly coalescer: Coalescer;

  constructor(
    readonly name: string,
    readonly rule: Rule,
    private readonly context: BucketsContext,
    private readonly statements: RuleStatements,
    /** What the rule's algorithm sends and how its rows read (internal). */
    readonly binding: AlgorithmBinding,
  ) {
    this.kind = rule.kind;
    this.horizonMs = refundHorizonMs(rule);
    this.takeError = rule.block === undefined ? storeError : lockoutStoreError;
    this.coalescer = new Coalescer(context, {
      send: (batch) => this.sendBatch(batch),
      failure: this.takeError,
      decisions: () => new DecisionReplay(rule, name, binding),
    });
  }

  take(key: string, cost: number, now: number, limit: CallLimit | undefined): Promise<Decision> {
    try {
      if (!this.bound) throw this.unboundError();
      if (typeof limit === 'object') limit = checkedCallLimit(this.rule, limit, 'PostgresStore take');
    } catch (error) {
      return Promise.reject(error);
    }
    const account = this.context.accountKeys?.parse(key);
    if (account !== undefined) {
      return this.takeForAccount(account.userId, account.bucket, undefined, cost, now, limit).then(
        (result) => result.decision,
      );
    }
    const bucket = bucketId(key);
    return new Promise<Decision>((resolve, reject) =>
      this.coalescer.add(bucket, cost, limit, now, { resolve, reject }),
    );
  }

  /**
   * Deletes the bucket's row and records the reset's time (the statement's, or on the
   * application's time `now`, else this process's clock) in the resets table, in one statement:
   * a refund of a take made at or before it then gives nothing back.
   */
  async reset(key: string, now?: number): Promise<void> {
    if (!this.bound) throw this.unboundError();
    const bucket = this.context.accountKeys?.parse(key)?.bucket ?? key;
    const values: unknown[] = [this.name, bucketId(bucket), this.horizonMs];
    if (this.context.timeSource === 'app')
      values.push(typeof now === 'number' && Number.isFinite(now) ? Math.floor(now) : Date.now());
    await this.run(this.context.client, this.statements.reset.text, values, this.statements.reset.name);
  }

  /**
   * A refund or settlement: one statement that locks the bucket's row and writes what the
   * rule's `adjust` leaves (see `adjustText` in statements.ts). On the application's time the
   * take's times are sent as they are; on the store's, as offsets from the caller's `now`,
   * measured when the statement leaves, which the statement adds to its own time (the edge is
   * in docs/postgres.md: a refund may give back less, never more). Bounded and checked against
   * its deadline as a take: a call answered as timed out never applies afterwards.
   */
  async adjust(key: string, { delta, now, takenAt, until, limit }: BucketAdjustment): Promise<void> {
    if (!this.bound) throw this.unboundError();
    const tier = checkedCallLimit(this.rule, limit, 'PostgresStore adjust');
    if (delta === 0) return;
    // A take that weighs longer than a reset is remembered (a long per-call tier), refunded more
    // than that after it: a reset in between may be forgotten, so it gives nothing (the safe side).
    const horizon = this.horizonMs;
    if (delta < 0 && now - takenAt > horizon && until - takenAt > horizon) return;
    const context = this.context;
    const account = context.accountKeys?.parse(key);
    const statement = account === undefined ? this.statements.adjust : this.statements.accountAdjust;
    if (statement === undefined) throw new Error('unreachable: account keys need the users option');
    const since = performance.now();
    const expected = context.storeTime.at(now);
    const params = (at: number) => this.binding.adjustParams(at, at + (takenAt - now), tier);
    const values: unknown[] = [
      ...params(expected),
      bucketId(account === undefined ? key : account.bucket),
      delta,
    ];
    if (context.timeSource === 'store')
      values.push(new OffsetAtSend(takenAt - now, since), new OffsetAtSend(until - now, since));
    else values.push(takenAt - now, until - now);
    if (account !== undefined) values.push(account.userId);
    if (context.timeSource === 'app') values.push(now);
    values.push(new TimeLeft(since + context.timeoutMs, context.timeoutMs));
    await withDeadline(
      this.execute(statement, values, params).catch((error: unknown) => {
        throw this.takeError(error);
      }),
      context.timeoutMs,
      TIMEOUT_SUBJECT,
    );
  }

  /**
   * Reserves a slot (see `RuleBuckets.reserve`): one statement of its own, the reservation's
   * (see `AlgorithmModule.reserveSql`), which locks the bucket's row as a take does, so that
   * reservations queue in the order PostgreSQL runs them. Bounded and checked against its
   * deadline as a take. Not for account keys.
   */
  async reserve(
    key: string,
    cost: number,
    now: number,
    maxWaitMs: number,
    limit?: CallLimit,
  ): Promise<Decision> {
    if (!this.bound) throw this.unboundError();
    reserverOf(this.rule);
    checkReservation(cost, maxWaitMs);
    const tier = checkedCallLimit(this.rule, limit, 'PostgresStore reserve');
    const statement = this.statements.reserve;
    const params = this.binding.reserveParams;
    if (statement === undefined || params === undefined || this.context.accountKeys?.parse(key) !== undefined)
      throw new SluiceError(
        'SLUICE_CONFIG',
        'PostgresStore reserves slots of token buckets on plain keys only',
      );
    const context = this.context;
    const at = (time: number) => params(time, maxWaitMs);
    const values: unknown[] = [
      ...at(context.storeTime.at(now)),
      bucketId(key),
      cost,
      1,
      this.limitOf(tier),
      ...this.tierValues(tier),
    ];
    if (context.timeSource === 'app') values.push(now);
    values.push(new TimeLeft(performance.now() + context.timeoutMs, context.timeoutMs));
    const rows = await withDeadline(
      this.execute(statement, values, at).catch((error: unknown) => {
        throw this.takeError(error);
      }),
      context.timeoutMs,
      TIMEOUT_SUBJECT,
    );
    const row = rows[0];
    if (row === undefined) throw storeError(new Error('statement returned too few rows'));
    const replay = new DecisionReplay(this.rule, this.name, this.binding);
    replay.start(row);
    return replay.reserve(cost, maxWaitMs, tier);
  }

  /**
   * Prepares the rule's take statements on `copies` connections at once (see
   * `PostgresStore.warm`): each is sent as a peek of a bucket no key maps to, with a deadline
   * already spent, so the server parses, plans and runs it up to its deadline check, which rolls
   * it back. Nothing is charged; a failure other than that check (a missing schema) is thrown.
   */
  async warm(copies: number, now: number): Promise<void> {
    const time: BatchTime = { now, deadline: 0 };
    const a = bucketId('sluice:warm-up:a');
    const b = bucketId('sluice:warm-up:b');
    const runs: [Statement, unknown[]][] = [
      [this.statements.single, this.values(a, 0, 1, undefined, time)],
      [this.statements.batch, this.values([a, b], [0, 0], [1, 1], [undefined, undefined], time)],
    ];
    const plain = this.statements.plain;
    if (plain !== undefined) runs.push([plain, this.framed(time, this.takeHead(time, a, 0, 1))]);
    for (const [statement, values] of runs) {
      values[values.length - 1] = new SpentTimeLeft();
      const sent: Promise<unknown>[] = [];
      for (let i = 0; i < copies; i++) {
        sent.push(
          this.context.client
            .query(statement.text, values, statement.name)
            .then(undefined, (error: unknown) => {
              const mapped = this.takeError(error);
              if (mapped.code !== 'SLUICE_STORE_TIMEOUT') throw mapped;
            }),
        );
      }
      await Promise.all(sent);
    }
  }

  /** Called by the store when it unbinds the rule's name (internal). */
  release(): void {
    this.bound = false;
  }

  private unboundError(): SluiceError {
    return new SluiceError(
      'SLUICE_CONFIG',
      `rule ${JSON.stringify(this.name)} was unbound from its PostgresStore; bind it again to use it`,
    );
  }

  /**
   * The account take: charges `accountKey` (pseudonymous, e.g. `account:v1:<hmac>`) when
   * `userId` still exists, linking the row to the user through `account_rate_limit_buckets`;
   * otherwise charges `anonKey`. One statement; see the store's docs for the race it closes.
   * Without `anonKey` (an account key through a limiter), a user deleted meanwhile is decided
   * on the account bucket and nothing is written: there is no one left to charge.
   */
  async takeForAccount(
    userId: string,
    accountKey: string,
    anonKey: string | undefined,
    cost: number,
    now: number,
    limit: CallLimit | undefined,
  ): Promise<AccountTakeResult> {
    if (!this.bound) throw this.unboundError();
    const account = this.statements.account;
    if (account === undefined) throw new Error('unreachable: checked by PostgresStore');
    const anon = anonKey === undefined ? null : bucketId(anonKey);
    const values: unknown[] = [
      ...this.binding.ruleParams(this.context.storeTime.at(now)),
      bucketId(accountKey),
      cost,
      this.limitOf(limit),
      anon,
      userId,
      ...this.tierValues(limit),
    ];
    if (this.context.timeSource === 'app') values.push(now);
    values.push(new TimeLeft(performance.now() + this.context.timeoutMs, this.context.timeoutMs));
    const rows = await withDeadline(
      this.execute(account, values).catch((error: unknown) => {
        throw this.takeError(error);
      }),
      this.context.timeoutMs,
      TIMEOUT_SUBJECT,
    );
    const row = rows[0] as PostgresRow;
    const replay = new DecisionReplay(this.rule, this.name, this.binding);
    replay.start(row);
    return { mode: row.session === true ? 'session' : 'anon', decision: replay.next(cost, limit) };
  }

  /** The statement of a coalesced batch of takes (see {@link BatchSender}). */
  private sendBatch(batch: TakeBatch): Promise<readonly PostgresRow[]> {
    const groups = batch.groups;
    let statement = this.statements.single;
    let values: unknown[];
    if (groups.size === 1) {
      // A lone bucket (the common case below saturation): scalar parameters, cached plan.
      const group = groups.values().next().value as TakeGroup;
      const plain = this.statements.plain;
      if (plain !== undefined && group.limit === undefined) return this.takePlain(batch, plain, group);
      values = this.values(group.bucket, group.cost, group.waiters.length, group.limit, batch);
    } else {
      statement = this.statements.batch;
      const size = groups.size;
      const buckets = new Array<string>(size);
      const costs = new Array<number>(size);
      const counts = new Array<number>(size);
      const limits = new Array<CallLimit | undefined>(size);
      let i = 0;
      for (const group of groups.values()) {
        buckets[i] = group.bucket;
        costs[i] = group.cost;
        counts[i] = group.waiters.length;
        limits[i] = group.limit;
        i++;
      }
      values = this.values(buckets, costs, counts, limits, batch);
    }
    return this.execute(statement, values);
  }

  /**
   * A lone take under the rule's own parameters, by the lean statement (see `plain` in
   * statements.ts); where that answers `retry` (a state kept under a per-call tier), by the take
   * statement, within the same deadline.
   */
  private async takePlain(
    time: BatchTime,
    plain: Statement,
    group: TakeGroup,
  ): Promise<readonly PostgresRow[]> {
    const n = group.waiters.length;
    const values = this.framed(time, this.takeHead(time, group.bucket, group.cost, n));
    const rows = await this.execute(plain, values);
    if (rows[0]?.retry !== true) return rows;
    return this.execute(this.statements.single, this.values(group.bucket, group.cost, n, undefined, time));
  }

  /** What begins every take statement's values: the rule's, then bucket(s), cost(s), count(s). */
  private takeHead(
    time: BatchTime,
    buckets: string | string[],
    costs: number | number[],
    counts: number | number[],
  ): unknown[] {
    return [...this.binding.ruleParams(this.context.storeTime.at(time.now)), buckets, costs, counts];
  }

  /** `values` followed by what ends every take statement's: the application's now, the time left. */
  private framed(time: BatchTime, values: unknown[]): unknown[] {
    if (this.context.timeSource === 'app') values.push(time.now);
    values.push(new TimeLeft(time.deadline, this.context.timeoutMs));
    return values;
  }

  private limitOf(limit: CallLimit | undefined): number {
    return typeof limit === 'number' ? limit : this.rule.limit;
  }

  /** A take's values of its algorithm's own per-take columns (a token bucket's tier); none for the others. */
  private tierValues(limit: CallLimit | undefined): readonly unknown[] {
    const tierValues = this.binding.tierValues;
    return tierValues === undefined ? NO_VALUES : tierValues(limit);
  }

  /**
   * Runs a statement. When the rule's parameters (`params`: a take's unless told) depended on
   * the time (calendar periods) and the store's time proved to lie outside them, sends them
   * again around the store's time.
   */
  private async execute(
    statement: Statement,
    values: unknown[],
    params: (now: number) => unknown[] = this.binding.ruleParams,
  ): Promise<readonly PostgresRow[]> {
    const client = this.context.client;
    try {
      return await client.query(statement.text, values, statement.name);
    } catch (error) {
      const storeNow = stalePeriodsAt(error);
      if (storeNow === undefined) throw error;
      this.context.storeTime.learn(storeNow);
      const fresh = params(storeNow);
      for (let i = 0; i < fresh.length; i++) values[i] = fresh[i];
      return client.query(statement.text, values, statement.name);
    }
  }

  /**
   * The statement's parameters: the rule's, then the per-bucket ones (scalars or arrays: the
   * quota, then the algorithm's own per-take values), the application's now (timeSource "app"),
   * and the time left before the deadline of `time`.
   */
  private values(
    buckets: string | string[],
    costs: number | number[],
    counts: number | number[],
    limits: CallLimit | undefined | (CallLimit | undefined)[],
    time: BatchTime,
  ): unknown[] {
    const values = this.takeHead(time, buckets, costs, counts);
    if (!Array.isArray(limits)) {
      values.push(this.limitOf(limits), ...this.tierValues(limits));
    } else {
      values.push(limits.map((limit) => this.limitOf(limit)));
      const tierValues = this.binding.tierValues;
      if (tierValues !== undefined) {
        const columns = tierValues(undefined).length;
        if (!limits.some((limit) => typeof limit === 'object')) {
          // No tier in the batch: a NULL array per column, which unnest pads with NULLs (a row
          // per bucket, the rule's own parameters) without sending an array of them.
          for (let c = 0; c < columns; c++) values.push(null);
        } else {
          // One array per column, a row per bucket.
          const rows = limits.map((limit) => tierValues(limit));
          for (let c = 0; c < columns; c++) values.push(rows.map((row) => row[c]));
        }
      }
    }
    return this.framed(time, values);
  }

  private async run(
    client: PostgresQueryable,
    text: string,
    values: unknown[],
    name: string,
  ): Promise<readonly PostgresRow[]> {
    return withDeadline(
      client.query(text, values, name).catch(rethrowMapped),
      this.context.timeoutMs,
      TIMEOUT_SUBJECT,
    );
  }
}
