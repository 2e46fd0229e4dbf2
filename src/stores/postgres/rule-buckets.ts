import type { Decision } from '../../core/decision.js';
import type { CallLimit, Rule } from '../../core/rules/rule.js';
import type { RuleBuckets } from '../contract/store.js';
import { bucketId } from '../shared/bucket-id.js';
import type { PostgresClient, PostgresQueryable, PostgresRow } from './client.js';
import { DecisionReplay } from './decisions.js';
import type { RuleStatements, Statement } from './statements.js';
import type { TimeSource } from '../shared/time-source.js';
import { stalePeriodsAt, type AlgorithmBinding } from './algorithms/index.js';
import type { StoreTime } from './store-time.js';
import {
  TIMEOUT_SUBJECT,
  lockoutStoreError,
  rethrowMapped,
  storeError,
  timeoutError,
  type PostgresStoreError,
} from './errors.js';
import { withDeadline } from '../shared/deadline.js';
import type { AccountKeys } from './account-key.js';
import { OffsetAtSend, SpentTimeLeft, TimeLeft } from './bounded-client.js';
import { SluiceError } from '../../core/errors.js';
import { checkReservation, reserverOf } from '../../core/reservation.js';
import { checkedCallLimit } from './call-tier.js';
import { sameCallLimit } from '../../core/call-limit.js';
import { refundHorizonMs } from '../shared/refund-horizon.js';

/** The per-take values of an algorithm without per-take columns of its own. */
const NO_VALUES: readonly unknown[] = [];

/** What a rule's buckets share with their store. */
export interface BucketsContext {
  readonly client: PostgresClient;
  /** When the server last answered any statement (see `BoundedClient.lastReplyAt`). */
  readonly replies: { readonly lastReplyAt: number };
  readonly timeSource: TimeSource;
  /** The time statements are expected to decide at (for parameters that depend on it). */
  readonly storeTime: StoreTime;
  readonly timeoutMs: number;
  /** Statements in flight per rule before takes wait and coalesce; 0 = no coalescing. */
  readonly inFlight: number;
  /** Distinct buckets per coalesced statement. */
  readonly maxKeys: number;
  /** Reads account keys (see `PostgresStore.accountKey`); undefined without the users option. */
  readonly accountKeys: AccountKeys | undefined;
}

interface Waiter {
  resolve(decision: Decision): void;
  reject(error: unknown): void;
}

/**
 * Takes of one bucket with one cost and limit (a token bucket's tier by its numbers), answered
 * by one row: a take of the bucket under another tier leaves in a statement of its own, so each
 * row is decided under its own parameters.
 */
interface Group {
  readonly bucket: string;
  readonly cost: number;
  readonly limit: CallLimit | undefined;
  readonly waiters: Waiter[];
}

/** One statement's worth of takes. */
interface Batch {
  readonly groups: Map<string, Group>;
  readonly now: number;
  /**
   * When its takes time out, on the monotonic clock (performance.now()); kept when a batch is
   * split. 0 until its clock starts (see `PostgresRuleBuckets.startClocks`).
   */
  deadline: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Answered, failed or timed out: later outcomes are ignored. */
  done: boolean;
  /** Holds one of the rule's in-flight slots. */
  sent: boolean;
  /** Sent before its clock started: its statement leaves when the clock starts. */
  sendOnStart: boolean;
}

/** For scheduling a microtask: cheaper than queueMicrotask, which wraps each in an AsyncResource. */
const resolved = Promise.resolve();

/** The outcome of an account take: which bucket was charged, and its decision. */
export interface AccountTakeResult {
  /** `"session"` when the user still exists, `"anon"` when the take fell back to the IP bucket. */
  readonly mode: 'session' | 'anon';
  readonly decision: Decision;
}

/**
 * One rule's buckets in a {@link PostgresStore}. A take is one statement. While a rule already
 * has its statements in flight, further takes wait for the next statement and share it: takes of
 * one key with one cost become one row (`n` takes), takes of other keys more rows. That keeps a
 * hot key from queueing one transaction per take on its row lock, and turns many concurrent takes
 * into few commits, without changing any decision: the statement applies the `n` takes in order.
 */
export class PostgresRuleBuckets implements RuleBuckets {
  readonly kind: string;
  private pending: Batch | undefined;
  private running = 0;
  /** Rows (distinct buckets) of the statements running: what their answers will bring back. */
  private runningRows = 0;
  /** False once the store unbound the rule's name: every later call is refused. */
  private bound = true;
  /** Batches made in this synchronous run, whose clocks start once it ends. */
  private unstarted: Batch[] = [];
  private readonly startClocks = (): void => {
    const batches = this.unstarted;
    this.unstarted = [];
    const deadline = performance.now() + this.context.timeoutMs;
    for (const batch of batches) {
      if (batch.done) continue;
      batch.deadline = deadline;
      this.arm(batch);
      if (batch.sendOnStart) this.sendStatement(batch);
    }
  };
  /** How long the resets table remembers a reset of this rule (see `refundHorizonMs`). */
  private readonly horizonMs: number;
  /** How a take's driver error reads: a rule with a lockout names its columns when they are missing. */
  private readonly takeError: (error: unknown) => PostgresStoreError;

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
  }

  take(key: string, cost: number, now: number, limit: CallLimit | undefined): Promise<Decision> {
    if (!this.bound) return Promise.reject(this.unboundError());
    if (typeof limit === 'object') {
      try {
        limit = checkedCallLimit(this.rule, limit, 'PostgresStore take');
      } catch (error) {
        return Promise.reject(error);
      }
    }
    const account = this.context.accountKeys?.parse(key);
    if (account !== undefined) {
      return this.takeForAccount(account.userId, account.bucket, undefined, cost, now, limit).then(
        (result) => result.decision,
      );
    }
    const bucket = bucketId(key);
    return new Promise<Decision>((resolve, reject) =>
      this.enqueue(bucket, cost, limit, now, { resolve, reject }),
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
  async adjust(
    key: string,
    delta: number,
    now: number,
    takenAt: number,
    until: number,
    limit?: CallLimit,
  ): Promise<void> {
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
    const batch: Batch = {
      groups: new Map(),
      now,
      deadline: 0,
      timer: undefined,
      done: true,
      sent: false,
      sendOnStart: false,
    };
    const a = bucketId('sluice:warm-up:a');
    const b = bucketId('sluice:warm-up:b');
    const runs: [Statement, unknown[]][] = [
      [this.statements.single, this.values(a, 0, 1, undefined, batch)],
      [this.statements.batch, this.values([a, b], [0, 0], [1, 1], [undefined, undefined], batch)],
    ];
    const plain = this.statements.plain;
    if (plain !== undefined) runs.push([plain, this.framed(batch, this.takeHead(batch, a, 0, 1))]);
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
   * otherwise charges `anonKey`. One statement; see the store's docs for the race it settles.
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

  private enqueue(
    bucket: string,
    cost: number,
    limit: CallLimit | undefined,
    now: number,
    waiter: Waiter,
  ): void {
    const context = this.context;
    const batch = this.pending;
    if (context.inFlight === 0 || (batch === undefined && this.running < context.inFlight)) {
      this.send(this.newBatch(bucket, cost, limit, now, waiter));
      return;
    }
    if (batch === undefined) {
      this.pending = this.newBatch(bucket, cost, limit, now, waiter);
      return;
    }
    // With the application's time, one statement has one `now`.
    if (context.timeSource === 'store' || batch.now === now) {
      const group = batch.groups.get(bucket);
      if (group !== undefined) {
        if (group.cost === cost && sameCallLimit(group.limit, limit)) {
          group.waiters.push(waiter);
          return;
        }
      } else if (batch.groups.size < context.maxKeys) {
        batch.groups.set(bucket, { bucket, cost, limit, waiters: [waiter] });
        return;
      }
    }
    // Cannot share the waiting statement: go on its own (correct either way, only less batched).
    this.send(this.newBatch(bucket, cost, limit, now, waiter));
  }

  private newBatch(
    bucket: string,
    cost: number,
    limit: CallLimit | undefined,
    now: number,
    waiter: Waiter,
  ): Batch {
    const groups = new Map<string, Group>();
    groups.set(bucket, { bucket, cost, limit, waiters: [waiter] });
    // Its clock starts once the synchronous run that made it ends, as the Redis store's does: a
    // burst of 20,000 takes in one tick is the caller's time, not the store's, and would
    // otherwise time out every take it queued before the first statement could leave.
    const batch: Batch = {
      groups,
      now,
      deadline: 0,
      timer: undefined,
      done: false,
      sent: false,
      sendOnStart: false,
    };
    if (this.unstarted.length === 0) resolved.then(this.startClocks);
    this.unstarted.push(batch);
    return batch;
  }

  private batchOf(groups: Map<string, Group>, now: number, deadline: number): Batch {
    const batch: Batch = {
      groups,
      now,
      deadline,
      timer: undefined,
      done: false,
      sent: false,
      sendOnStart: false,
    };
    this.arm(batch);
    return batch;
  }

  /**
   * Times `batch` out at its deadline. The bound covers waiting for a slot and the statement
   * itself. The timer only schedules the check for after the poll phase, which reads the replies
   * that have arrived: a statement the server answered in time is not timed out because the
   * process was busy (a burst) meanwhile.
   */
  private arm(batch: Batch): void {
    batch.timer = setTimeout(
      () => setImmediate(() => this.expire(batch)),
      Math.max(0, batch.deadline - performance.now()),
    );
    batch.timer.unref?.();
  }

  private send(batch: Batch): void {
    batch.sent = true;
    this.running++;
    this.runningRows += batch.groups.size;
    if (batch.deadline === 0) batch.sendOnStart = true;
    else this.sendStatement(batch);
  }

  /** Sends the statement of a batch holding an in-flight slot. */
  private sendStatement(batch: Batch): void {
    const groups = batch.groups;
    let statement = this.statements.single;
    let values: unknown[];
    if (groups.size === 1) {
      // A lone bucket (the common case below saturation): scalar parameters, cached plan.
      const group = groups.values().next().value as Group;
      const plain = this.statements.plain;
      if (plain !== undefined && group.limit === undefined) {
        this.settle(batch, this.takePlain(batch, plain, group));
        return;
      }
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
    this.settle(batch, this.execute(statement, values));
  }

  /** Answers or fails a sent batch's takes with its statement's rows. */
  private settle(batch: Batch, rows: Promise<readonly PostgresRow[]>): void {
    rows.then(
      (answered) => this.answer(batch, answered),
      (error: unknown) => this.fail(batch, this.takeError(error)),
    );
  }

  /**
   * A lone take under the rule's own parameters, by the lean statement (see `plain` in
   * statements.ts); where that answers `retry` (a state kept under a per-call tier), by the take
   * statement, within the same deadline.
   */
  private async takePlain(batch: Batch, plain: Statement, group: Group): Promise<readonly PostgresRow[]> {
    const n = group.waiters.length;
    const values = this.framed(batch, this.takeHead(batch, group.bucket, group.cost, n));
    const rows = await this.execute(plain, values);
    if (rows[0]?.retry !== true) return rows;
    return this.execute(this.statements.single, this.values(group.bucket, group.cost, n, undefined, batch));
  }

  /** What begins every take statement's values: the rule's, then bucket(s), cost(s), count(s). */
  private takeHead(
    batch: Batch,
    buckets: string | string[],
    costs: number | number[],
    counts: number | number[],
  ): unknown[] {
    return [...this.binding.ruleParams(this.context.storeTime.at(batch.now)), buckets, costs, counts];
  }

  /** `values` followed by what ends every take statement's: the application's now, the time left. */
  private framed(batch: Batch, values: unknown[]): unknown[] {
    if (this.context.timeSource === 'app') values.push(batch.now);
    values.push(new TimeLeft(batch.deadline, this.context.timeoutMs));
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
   * and the time left before the batch's deadline.
   */
  private values(
    buckets: string | string[],
    costs: number | number[],
    counts: number | number[],
    limits: CallLimit | undefined | (CallLimit | undefined)[],
    batch: Batch,
  ): unknown[] {
    const values = this.takeHead(batch, buckets, costs, counts);
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
    return this.framed(batch, values);
  }

  private answer(batch: Batch, rows: readonly PostgresRow[]): void {
    if (!this.finish(batch)) return;
    const replay = new DecisionReplay(this.rule, this.name, this.binding);
    const groups = batch.groups;
    // One row per bucket, in no particular order (see statements.ts).
    let answered = 0;
    for (const row of rows) {
      const group = groups.get(row.bucket as string);
      if (group === undefined || group.waiters.length === 0) continue;
      answered++;
      replay.start(row);
      for (const waiter of group.waiters) waiter.resolve(replay.next(group.cost, group.limit));
      group.waiters.length = 0;
    }
    if (answered === groups.size) return;
    const error = storeError(new Error('statement returned too few rows'));
    for (const group of groups.values()) for (const waiter of group.waiters) waiter.reject(error);
  }

  private fail(batch: Batch, error: unknown): void {
    if (!this.finish(batch)) return;
    for (const group of batch.groups.values()) for (const waiter of group.waiters) waiter.reject(error);
  }

  private expire(batch: Batch): void {
    if (batch.done) return;
    if (this.pending === batch) this.pending = undefined;
    const error = this.timeoutOf(batch);
    // A timed-out statement may still run; its slot is released so that the rule is not stuck
    // behind it. It cannot charge after its deadline (the statement checks it before answering
    // and rolls back), and the store's maxOutstanding bounds how many such statements wait.
    this.finish(batch);
    for (const group of batch.groups.values()) for (const waiter of group.waiters) waiter.reject(error);
  }

  /**
   * The error of a batch whose time ran out: load (SLUICE_STORE_OVERLOADED) when the server
   * answered a statement after the batch's clock started (it answers; these takes waited behind
   * others in sluice's own queue), otherwise a timeout (it may be failing).
   */
  private timeoutOf(batch: Batch): SluiceError {
    const { timeoutMs, replies } = this.context;
    if (replies.lastReplyAt <= batch.deadline - timeoutMs) return timeoutError(timeoutMs);
    return new SluiceError(
      'SLUICE_STORE_OVERLOADED',
      `PostgreSQL kept answering, but these takes waited in the store's queue longer than its timeout (${timeoutMs} ms): load, not a failure`,
    );
  }

  /** Marks `batch` done, frees its slot and sends the waiting batch. False if already done. */
  private finish(batch: Batch): boolean {
    if (batch.done) return false;
    batch.done = true;
    clearTimeout(batch.timer);
    if (batch.sent) {
      // The slot is freed one turn of the event loop later: callers answered just now usually
      // take again at once (in the microtasks this answer runs), and their takes then join the
      // waiting statement instead of leaving one by one. Fewer, larger statements and commits.
      setImmediate(() => {
        this.running--;
        this.runningRows -= batch.groups.size;
        this.sendPending();
      });
    }
    return true;
  }

  /**
   * Sends the waiting statement into the free slots, unless it is much smaller than those still
   * running: then it waits for them and leaves with their callers. Without this, callers split
   * into one large statement and one with a lone key, which keeps returning first and leaving
   * alone (16 callers on many keys: statements of 15 and 1 rows, in turn). Held back, the lone
   * key joins the others, and the whole is split evenly over the free slots, which stays even.
   */
  private sendPending(): void {
    const next = this.pending;
    if (next === undefined) return;
    if (this.running > 0 && next.groups.size * this.running < this.runningRows) return;
    this.pending = undefined;
    const free = this.context.inFlight - this.running;
    const parts = Math.min(free, next.groups.size);
    if (parts <= 1) {
      this.send(next);
      return;
    }
    // Split the rows evenly over the free slots; each part bounds its own time as any batch.
    clearTimeout(next.timer);
    next.done = true;
    const per = Math.ceil(next.groups.size / parts);
    let part = new Map<string, Group>();
    for (const [bucket, group] of next.groups) {
      part.set(bucket, group);
      if (part.size === per) {
        this.send(this.batchOf(part, next.now, next.deadline));
        part = new Map();
      }
    }
    if (part.size > 0) this.send(this.batchOf(part, next.now, next.deadline));
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
