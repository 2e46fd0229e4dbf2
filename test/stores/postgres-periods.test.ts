/**
 * Calendar quotas of every period on PostgreSQL: the periods a statement counts in equal the
 * core's CalendarPeriods at every instant (around DST changes in zones with whole-hour,
 * half-hour and 45-minute offsets), also when the periods were sent for a time other than the
 * store's; a store clock far from the application's is caught and corrected; a schema older than
 * the window table is reported as such.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type pg from 'pg';
import { calendarQuota, createLimiter, fixedWindow, isSluiceError, tokenBucket } from '../../src/index.js';
import { CalendarPeriods, type CalendarUnit } from '../../src/core/calendar.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { algorithmOf, stalePeriodsAt } from '../../src/stores/postgres/algorithms/index.js';
import { postgresMigrations, schemaNames } from '../../src/stores/postgres/migrations.js';
import type { StoreTime } from '../../src/stores/postgres/store-time.js';
import { skipUnlessReachable } from '../support/services.js';
import { dropSchema, postgresUrl, runSchema, testPool } from '../support/postgres.js';

const skip = await skipUnlessReachable('postgres', postgresUrl);
const schema = runSchema('periods');
const HOUR = 3_600_000;

/** Zones and one instant near each of their DST changes (or a date line jump) in 2025–2026. */
const changes: readonly [string, number][] = [
  ['Europe/Berlin', Date.UTC(2026, 2, 29, 1)],
  ['Europe/Berlin', Date.UTC(2026, 9, 25, 1)],
  ['America/New_York', Date.UTC(2026, 2, 8, 7)],
  ['America/New_York', Date.UTC(2026, 10, 1, 6)],
  ['Australia/Lord_Howe', Date.UTC(2026, 3, 4, 15)],
  ['Australia/Lord_Howe', Date.UTC(2026, 9, 3, 15, 30)],
  ['Asia/Kathmandu', Date.UTC(2026, 0, 31, 18, 15)],
  ['America/St_Johns', Date.UTC(2026, 2, 8, 5, 30)],
  ['America/St_Johns', Date.UTC(2026, 10, 1, 4, 30)],
  ['Pacific/Apia', Date.UTC(2026, 0, 1, 10)],
  ['UTC', Date.UTC(2026, 1, 28, 23, 59)],
];
const units: readonly CalendarUnit[] = ['hour', 'day', 'week', 'month'];

describe('PostgreSQL calendar periods', { skip }, () => {
  let pool: pg.Pool;

  before(async () => {
    pool = testPool();
    await new PostgresStore({ client: pool, schema }).migrate();
  });
  after(() => dropSchema(pool, schema).then(() => pool.end()));

  it("counts in the core's period at every instant, from periods sent for a nearby time, or asks for them again", async () => {
    const names = schemaNames(schema);
    const module = algorithmOf(calendarQuota({ limit: 1 }));
    const prelude = module.ruleSql(names).prelude('$1::bigint');
    // $2 is the boundaries parameter of the rule; $3 (penalty) is not read by the prelude.
    const text = `SELECT p.a_start::float8 AS s, p.a_end::float8 AS e FROM (${prelude}) p`;
    const instant = fc.tuple(
      fc.constantFrom(...changes),
      fc.constantFrom(...units),
      fc.constantFrom(1, 4, 7),
      fc.integer({ min: -40 * HOUR, max: 40 * HOUR }),
      // Or an instant at a period's very edge: the last one before it, the first one of it, the next.
      fc.constantFrom(undefined, -1, 0, 1),
      // How far the time the periods were sent for lies from the statement's.
      fc.oneof(
        fc.constant(0),
        fc.integer({ min: -3 * HOUR, max: 3 * HOUR }),
        fc.integer({ min: -40 * 86_400_000, max: 40 * 86_400_000 }),
      ),
    );
    await fc.assert(
      fc.asyncProperty(instant, async ([[zone, change], per, weekStart, offset, edge, skew]) => {
        const rule = calendarQuota({
          limit: 1,
          per,
          timeZone: zone,
          ...(per === 'week' ? { weekStart: weekStart as 1 | 4 | 7 } : {}),
        });
        const core = new CalendarPeriods(zone, per, rule.weekStart);
        const now = edge === undefined ? change + offset : core.endOf(change + offset) + edge;
        const bounds = module.bind('r', rule).ruleParams(now + skew)[1] as number[];
        const where = `${zone} per ${per} at ${new Date(now).toISOString()}, periods sent for ${skew} ms away`;
        try {
          const { rows } = await pool.query(text, [now, bounds]);
          assert.deepEqual([rows[0].s, rows[0].e], [core.startOf(now), core.endOf(now)], where);
        } catch (error) {
          // Only when the periods sent do not hold the statement's time, naming that time.
          assert.equal(stalePeriodsAt(error), now, `${where}: ${String(error)}`);
          assert.ok(now < (bounds[0] as number) || now >= (bounds[3] as number), where);
        }
      }),
      { numRuns: 600 },
    );
  });

  it("corrects the periods when the store's clock is far from the application's", async () => {
    const store = new PostgresStore({ client: pool, schema, timeout: '10s' });
    // As if this process's clock ran 40 days ahead of PostgreSQL's: the first statement is sent
    // with periods that do not hold the store's time, and is sent again with the right ones.
    const storeTime = (store as unknown as { context: { storeTime: StoreTime } }).context.storeTime;
    storeTime.learn(Date.now() + 40 * 86_400_000);
    const quota = createLimiter({
      name: 'hourly',
      rule: calendarQuota({ limit: 2, per: 'hour', timeZone: 'Asia/Kathmandu' }),
      store,
      timeout: '10s',
    });
    const first = await quota.take('k');
    assert.equal(first.allowed, true);
    assert.equal(first.remaining, 1);
    assert.equal(first.windowMs, HOUR);
    assert.ok(first.resetMs > 0 && first.resetMs <= HOUR, "measured to the end of the store's hour");
    const [all] = await store.takeAll(
      [{ buckets: quota.buckets, key: 'k', cost: 1, limit: undefined }],
      Date.now(),
    );
    assert.equal(all?.remaining, 0, 'the all-or-nothing statement counts in the same hour');
  });

  it('a store on a schema from before the window table reports SLUICE_STORE_SCHEMA for window rules, and token buckets keep working', async () => {
    const old = runSchema('periods_old');
    try {
      await pool.query(`CREATE SCHEMA "${old}"`);
      const n = schemaNames(old);
      await pool.query(
        `CREATE TABLE ${n.migrations} (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      for (const migration of postgresMigrations({ schema: old })) {
        // Token buckets need the tier columns (009) whatever else the schema lacks.
        if (migration.name >= '005' && migration.name !== '009_token_bucket_tiers') continue;
        for (const sql of migration.statements) await pool.query(sql);
        await pool.query(`INSERT INTO ${n.migrations} (name) VALUES ($1)`, [migration.name]);
      }
      const store = new PostgresStore({ client: pool, schema: old, timeout: '10s' });
      const bucket = store.bind('b', tokenBucket({ limit: 5, period: '1s' }));
      assert.equal((await bucket.take('k', 1, Date.now(), undefined)).remaining, 4);
      for (const rule of [
        fixedWindow({ limit: 5, window: '1m' }),
        calendarQuota({ limit: 5, per: 'week' }),
      ]) {
        const buckets = store.bind(`w-${rule.kind}`, rule);
        await assert.rejects(buckets.take('k', 1, Date.now(), undefined), (e: unknown) =>
          isSluiceError(e, 'SLUICE_STORE_SCHEMA'),
        );
      }
      assert.deepEqual(await store.migrate(), [
        '005_window_counters',
        '007_lockouts',
        '008_leases',
        '010_carry_quota_counters',
        '011_bucket_resets',
      ]);
      assert.equal(
        (
          await store
            .bind('after', fixedWindow({ limit: 5, window: '1m' }))
            .take('k', 1, Date.now(), undefined)
        ).remaining,
        4,
      );
    } finally {
      await dropSchema(pool, old);
    }
  });
});
