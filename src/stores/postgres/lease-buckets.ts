import { SluiceError } from '../../core/errors.js';
import { checkLeaseCall, type LeaseBuckets, type LeaseGrant } from '../contract/lease-store.js';
import { bucketId } from '../shared/bucket-id.js';
import { withDeadline } from '../shared/deadline.js';
import type { TimeSource } from '../shared/time-source.js';
import { TimeLeft } from './bounded-client.js';
import type { SchemaNames } from './schema-names.js';
import type { PostgresClient } from './client.js';
import { TIMEOUT_SUBJECT, rethrowMapped } from './errors.js';
import { statementClock } from './sql-clock.js';
import { statement, type Statement } from './statement.js';

/**
 * Leases in PostgreSQL: one row per key of a lease group in `leases`, the ids of the leases held
 * and their expiries in two arrays sorted by expiry (at most `max` each). A row, not a row per
 * lease: concurrent acquisitions of one key then serialise on that row (the upsert locks it and
 * re-reads its latest version), which makes "fewer than max" exact under concurrency in one
 * statement, as the buckets' upserts are.
 *
 * - acquire: one upsert that keeps the unexpired leases and adds the new one, only while fewer
 *   than `max` are unexpired (`ON CONFLICT … DO UPDATE … WHERE`); a refusal writes nothing and
 *   reads the row's leases from the statement's snapshot for its answer;
 * - release: one update that drops the lease (and the expired ones) from the row, only when it
 *   is held and unexpired.
 *
 * `expires_at` is the latest expiry written: from then on the row holds nothing, and `prune()`
 * deletes it. Both statements pass their answer through the deadline check, so a call answered
 * as timed out never applies afterwards.
 */

/** The two statements of the lease groups of one store. */
export interface LeaseStatements {
  readonly acquire: Statement;
  readonly release: Statement;
}

/**
 * Parameters of acquire: $1 the group's name, $2 the bucket id, $3 the lease id, $4 the ttl, $5
 * max; of release: $1, $2, $3. Then on the app's time its now, then the time left before the
 * deadline.
 */
export function leaseStatements(names: SchemaNames, timeSource: TimeSource): LeaseStatements {
  return {
    acquire: statement(acquireText(names, timeSource)),
    release: statement(releaseText(names, timeSource)),
  };
}

/** The unexpired leases of `row` as rows x(i, e). */
function liveOf(row: string, now: string): string {
  return `FROM unnest(${row}.ids, ${row}.expiries) AS x(i, e) WHERE x.e > ${now}`;
}

function acquireText(names: SchemaNames, timeSource: TimeSource): string {
  const { now, onTime } = statementClock(names.schema, timeSource, 6);
  const expiry = `${now} + $4::bigint`;
  return `WITH up AS (
  INSERT INTO ${names.leases} AS l (rule, bucket, ids, expiries, expires_at)
  VALUES ($1, $2, ARRAY[$3::text], ARRAY[${expiry}], ${expiry})
  ON CONFLICT (rule, bucket) DO UPDATE SET
    (ids, expiries) = (
      SELECT array_agg(u.i ORDER BY u.e, u.i), array_agg(u.e ORDER BY u.e, u.i)
      FROM (SELECT x.i, x.e ${liveOf('l', now)} UNION ALL SELECT $3::text, ${expiry}) AS u
    ),
    expires_at = GREATEST(l.expires_at, ${expiry})
  WHERE (SELECT count(*) ${liveOf('l', now)}) < $5::bigint
  RETURNING cardinality(l.expiries) AS held, l.expiries[cardinality(l.expiries)] AS last
)
SELECT up.held, up.last, s.held AS seen, s.first AS seen_first, s.last AS seen_last,
  ${now} AS now, ${onTime} AS in_time
FROM (SELECT 1) AS one
LEFT JOIN up ON true
LEFT JOIN LATERAL (
  SELECT count(*) AS held, min(x.e) AS first, max(x.e) AS last
  FROM ${names.leases} AS r, unnest(r.ids, r.expiries) AS x(i, e)
  WHERE r.rule = $1 AND r.bucket = $2 AND x.e > ${now}
) AS s ON up.held IS NULL`;
}

function releaseText(names: SchemaNames, timeSource: TimeSource): string {
  const { now, onTime } = statementClock(names.schema, timeSource, 4);
  return `WITH up AS (
  UPDATE ${names.leases} AS l SET
    (ids, expiries) = (
      SELECT coalesce(array_agg(x.i ORDER BY x.e, x.i), '{}'), coalesce(array_agg(x.e ORDER BY x.e, x.i), '{}')
      ${liveOf('l', now)} AND x.i <> $3::text
    )
  WHERE l.rule = $1 AND l.bucket = $2 AND EXISTS (SELECT 1 ${liveOf('l', now)} AND x.i = $3::text)
  RETURNING 1
)
SELECT (SELECT count(*) FROM up) AS released, ${onTime} AS in_time`;
}

/** What a lease group needs of its store. */
export interface LeaseContext {
  readonly client: PostgresClient;
  readonly timeSource: TimeSource;
  readonly timeoutMs: number;
  readonly statements: LeaseStatements;
  /** False once the store unbound the group's name. */
  holds(group: PostgresLeaseBuckets): boolean;
}

/** One lease group in a `PostgresStore`: one statement per operation (see {@link leaseStatements}). */
export class PostgresLeaseBuckets implements LeaseBuckets {
  constructor(
    private readonly context: LeaseContext,
    readonly name: string,
    readonly max: number,
    readonly ttlMs: number,
  ) {}

  async acquire(key: string, id: string, now: number): Promise<LeaseGrant> {
    const [row] = await this.run(this.context.statements.acquire, key, id, now, [this.ttlMs, this.max]);
    const at = Number(row?.now);
    if (row?.held !== null && row?.held !== undefined) {
      return { acquired: true, held: Number(row.held), retryAfterMs: 0, resetMs: Number(row.last) - at };
    }
    // Refused: the upsert found max unexpired leases on the row's latest version. The snapshot
    // may predate it (a lease granted meanwhile): then the ttl bounds the wait.
    const seen = Number(row?.seen ?? 0);
    const first = seen > 0 ? Number(row!.seen_first) - at : this.ttlMs;
    const last = seen > 0 ? Number(row!.seen_last) - at : this.ttlMs;
    return {
      acquired: false,
      held: Math.max(seen, this.max),
      retryAfterMs: Math.max(1, first),
      resetMs: last,
    };
  }

  async release(key: string, id: string, now: number): Promise<boolean> {
    const [row] = await this.run(this.context.statements.release, key, id, now, []);
    return Number(row?.released) === 1;
  }

  private run(
    statement: Statement,
    key: string,
    id: string,
    now: number,
    extra: readonly number[],
  ): Promise<readonly Record<string, unknown>[]> {
    const context = this.context;
    try {
      if (!context.holds(this)) {
        throw new SluiceError(
          'SLUICE_CONFIG',
          `lease group ${JSON.stringify(this.name)} is not bound to this PostgresStore (never bound, or unbound since)`,
        );
      }
      checkLeaseCall('PostgresStore', key, id, now);
    } catch (error) {
      return Promise.reject(error);
    }
    const values: unknown[] = [this.name, bucketId(key), id, ...extra];
    if (context.timeSource === 'app') values.push(Math.floor(now));
    values.push(new TimeLeft(performance.now() + context.timeoutMs, context.timeoutMs));
    return withDeadline(
      context.client.query(statement.text, values, statement.name).catch(rethrowMapped),
      context.timeoutMs,
      TIMEOUT_SUBJECT,
    );
  }
}
