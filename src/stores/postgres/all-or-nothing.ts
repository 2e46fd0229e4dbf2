import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { CallLimit } from '../../core/rules/rule.js';
import { checkedCallLimit } from './call-tier.js';
import type { TakeEntry } from '../contract/store.js';
import { withDeadline } from '../shared/deadline.js';
import { bucketId } from '../shared/bucket-id.js';
import type { TimeSource } from '../shared/time-source.js';
import { stalePeriodsAt, type AlgorithmModule } from './algorithms/index.js';
import type { AccountKeys } from './account-key.js';
import { TimeLeft } from './bounded-client.js';
import { DecisionReplay } from './decisions.js';
import type { SchemaNames } from './schema-names.js';
import type { PostgresClient, PostgresRow } from './client.js';
import { TIMEOUT_SUBJECT, rethrowLockoutMapped, rethrowMapped } from './errors.js';
import type { PostgresRuleBuckets } from './rule-buckets.js';
import { ENTRY_COMMON_ARRAYS, takeAllStatement } from './take-all.js';
import type { Statement } from './statement.js';
import type { StoreTime } from './store-time.js';

/** How often a statement is sent again when PostgreSQL asks for a retry before giving up. */
const MAX_ATTEMPTS = 20;

/**
 * The store's all-or-nothing takes: one statement per entry list, assembled for the kinds the
 * list holds (cached per combination of kinds), decided by the core rules on the rows it
 * returns. Sent again when a missing row appeared concurrently (40001), when PostgreSQL broke a
 * deadlock (40P01), or when the calendar periods sent did not hold the store's time.
 */
export class AllOrNothing {
  private readonly statements = new Map<string, Statement>();

  constructor(
    private readonly client: PostgresClient,
    private readonly names: SchemaNames,
    private readonly timeSource: TimeSource,
    private readonly storeTime: StoreTime,
    private readonly timeoutMs: number,
    private readonly accountKeys: AccountKeys | undefined,
  ) {}

  async take(
    entries: readonly TakeEntry[],
    bound: readonly PostgresRuleBuckets[],
    modules: readonly AlgorithmModule[],
    now: number,
  ): Promise<Decision[]> {
    // Each entry's per-call limit as the statements take it (a tier checked, the rule's own as none).
    const limits = entries.map((entry, i) =>
      checkedCallLimit((bound[i] as PostgresRuleBuckets).rule, entry.limit, 'PostgresStore takeAll'),
    );
    for (let i = 0; i < entries.length; i++) {
      if (this.accountKeys?.parse((entries[i] as TakeEntry).key) !== undefined) {
        throw new SluiceError(
          'SLUICE_ARGUMENT',
          `an all-or-nothing take cannot charge an account key (rule ${JSON.stringify((bound[i] as PostgresRuleBuckets).name)}); take it on its own`,
        );
      }
    }
    // The kinds in one order, whatever the entries' order: one statement per combination (and
    // per whether a rule has a lockout, so that groups without one keep their statement).
    const kinds = [...new Set(modules)].sort((a, b) => (a.kind < b.kind ? -1 : 1));
    const lockouts = bound.some((buckets) => buckets.rule.block !== undefined);
    const key = `${kinds.map((m) => m.kind).join(',')}${lockouts ? '+lockouts' : ''}`;
    let sql = this.statements.get(key);
    if (sql === undefined) {
      sql = takeAllStatement(kinds, this.names, this.timeSource, lockouts);
      this.statements.set(key, sql);
    }
    const deadline = new TimeLeft(performance.now() + this.timeoutMs, this.timeoutMs);
    const rows = await withDeadline(
      this.send(sql, entries, limits, bound, modules, kinds, lockouts, now, deadline).catch(
        lockouts ? rethrowLockoutMapped : rethrowMapped,
      ),
      this.timeoutMs,
      TIMEOUT_SUBJECT,
    );
    // As the memory store: every entry decided without charging; when all admit, charged.
    const replays = new Array<DecisionReplay>(entries.length);
    const decisions = new Array<Decision>(entries.length);
    let admitted = true;
    for (const row of rows) {
      const index = (row.ord as number) - 1;
      const entry = entries[index] as TakeEntry;
      const buckets = bound[index] as PostgresRuleBuckets;
      const replay = new DecisionReplay(buckets.rule, buckets.name, buckets.binding);
      replay.start(row);
      replays[index] = replay;
      const decision = replay.next(entry.cost, limits[index], false);
      decisions[index] = decision;
      if (!decision.allowed) admitted = false;
    }
    if (!admitted) return decisions;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as TakeEntry;
      const replay = replays[i];
      if (replay !== undefined) decisions[i] = replay.next(entry.cost, limits[i]);
    }
    return decisions;
  }

  private async send(
    sql: Statement,
    entries: readonly TakeEntry[],
    limits: readonly (CallLimit | undefined)[],
    bound: readonly PostgresRuleBuckets[],
    modules: readonly AlgorithmModule[],
    kinds: readonly AlgorithmModule[],
    lockouts: boolean,
    now: number,
    deadline: TimeLeft,
  ): Promise<readonly PostgresRow[]> {
    let at = this.storeTime.at(now);
    for (let attempt = 1; ; attempt++) {
      const values = this.values(entries, limits, bound, modules, kinds, at);
      if (lockouts) values.push(bound.map((buckets) => buckets.rule.block?.forgetAfterMs ?? null));
      if (this.timeSource === 'app') values.push(now);
      values.push(deadline);
      try {
        return await this.client.query(sql.text, values, sql.name);
      } catch (error) {
        const storeNow = stalePeriodsAt(error);
        if (storeNow !== undefined) {
          this.storeTime.learn(storeNow);
          at = storeNow;
        }
        const code = (error as { code?: unknown } | null)?.code;
        const again = storeNow !== undefined || code === '40001' || code === '40P01';
        if (attempt >= MAX_ATTEMPTS || !again) throw error;
      }
    }
  }

  /** Per kind (in the statement's order): ord, rule, bucket, cost, limit, then the kind's own arrays. */
  private values(
    entries: readonly TakeEntry[],
    limits: readonly (CallLimit | undefined)[],
    bound: readonly PostgresRuleBuckets[],
    modules: readonly AlgorithmModule[],
    kinds: readonly AlgorithmModule[],
    at: number,
  ): unknown[] {
    const values: unknown[] = [];
    for (const kind of kinds) {
      const arrays: unknown[][] = Array.from(
        { length: ENTRY_COMMON_ARRAYS + kind.entryTypes.length },
        () => [],
      );
      for (let i = 0; i < entries.length; i++) {
        if (modules[i] !== kind) continue;
        const entry = entries[i] as TakeEntry;
        const buckets = bound[i] as PostgresRuleBuckets;
        const limit = limits[i];
        const row = [
          i + 1,
          buckets.name,
          bucketId(entry.key),
          entry.cost,
          typeof limit === 'number' ? limit : buckets.rule.limit,
          ...buckets.binding.entryParams(at, limit),
        ];
        for (let c = 0; c < row.length; c++) (arrays[c] as unknown[]).push(row[c]);
      }
      values.push(...arrays);
    }
    return values;
  }
}
