import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import type { Rule } from '../../src/core/rules/rule.js';
import {
  calendarQuota,
  createLimiter,
  fixedWindow,
  isSluiceError,
  manualClock,
  slidingWindow,
  tokenBucket,
} from '../../src/index.js';
import { CalendarDays } from '../../src/core/calendar.js';
import { PostgresStore, type PostgresClient } from '../../src/stores/postgres/index.js';
import { schemaNames } from '../../src/stores/postgres/migrations.js';
import { ruleStatements } from '../../src/stores/postgres/statements.js';
import { takeAllStatement } from '../../src/stores/postgres/take-all.js';
import { algorithmOf, lockoutBinding, lockoutRuleSql } from '../../src/stores/postgres/algorithms/index.js';
import { skipUnlessReachable } from '../support/services.js';
import {
  dropSchema,
  postgresUrl,
  runSchema,
  testPool,
  waitForLockWaiters,
  openAppSchema,
  closeAppSchema,
} from '../support/postgres.js';

const skip = await skipUnlessReachable('postgres', postgresUrl);
const schema = runSchema('store');
const users = { schema, table: 'users' };

describe('PostgresStore', { skip }, () => {
  let pool: pg.Pool;
  let counter = 0;
  const name = () => `t${++counter}`;

  before(async () => {
    pool = await openAppSchema(schema, users);
  });
  after(() => closeAppSchema(pool, schema));

  it("the default server clock ignores the caller's now", async () => {
    const store = new PostgresStore({ client: pool, schema, timeout: '10s' });
    const clock = manualClock(Date.UTC(2000, 0, 1));
    const l = createLimiter({
      name: name(),
      rule: tokenBucket({ limit: 1, period: '1d' }),
      store,
      clock,
      timeout: '10s',
    });
    assert.equal((await l.take('k')).allowed, true);
    // A caller clock this far ahead would have refilled the bucket; the server's did not move.
    clock.advance('30d');
    assert.equal((await l.take('k')).allowed, false);
    const caller = new PostgresStore({ client: pool, schema, timeSource: 'app', timeout: '10s' });
    const c = createLimiter({
      name: name(),
      rule: tokenBucket({ limit: 1, period: '1d' }),
      store: caller,
      clock,
      timeout: '10s',
    });
    assert.equal((await c.take('k')).allowed, true);
    clock.advance('30d');
    assert.equal((await c.take('k')).allowed, true);
  });

  it('one statement per decision (take, refusal, peek, quota)', async () => {
    let statements = 0;
    const counting: PostgresClient = {
      query(text, values, n) {
        statements++;
        return pool.query({ text, values: values as unknown[], name: n }).then((r) => r.rows);
      },
      transaction: () => Promise.reject(new Error('not used')),
    };
    const store = new PostgresStore({ client: counting, schema, timeout: '10s' });
    const t = createLimiter({
      name: name(),
      rule: tokenBucket({ limit: 2, period: '1h' }),
      store,
      timeout: '10s',
    });
    const q = createLimiter({ name: name(), rule: calendarQuota({ limit: 2 }), store, timeout: '10s' });
    for (let i = 0; i < 4; i++) await t.take('k');
    await t.peek('k');
    for (let i = 0; i < 3; i++) await q.take('k');
    assert.equal(statements, 8);
  });

  it('1,000 concurrent takes on one key through a pool of 20 admit exactly the limit', async () => {
    for (const batch of [undefined, false] as const) {
      const store = new PostgresStore({
        client: pool,
        schema,
        timeout: '1m',
        // Without coalescing, each of the 2,000 concurrent takes is a statement at the driver.
        ...(batch === false ? { batch, maxOutstanding: 2000 } : {}),
      });
      const t = createLimiter({
        name: name(),
        rule: tokenBucket({ limit: 100, period: '1d' }),
        store,
        timeout: '1m',
      });
      const q = createLimiter({ name: name(), rule: calendarQuota({ limit: 37 }), store, timeout: '1m' });
      const [ts, qs] = await Promise.all([
        Promise.all(Array.from({ length: 1000 }, () => t.take('hot'))),
        Promise.all(Array.from({ length: 1000 }, () => q.take('hot'))),
      ]);
      assert.equal(ts.filter((d) => d.allowed).length, 100, `token bucket, batch ${String(batch)}`);
      assert.equal(qs.filter((d) => d.allowed).length, 37, `quota, batch ${String(batch)}`);
    }
  });

  it('16 callers taking in turn over 40 keys: every key admits exactly its burst, every caller gets its own answer', async () => {
    // Closed-loop callers on many keys: the coalescing batches, holds back and splits statements.
    const store = new PostgresStore({ client: pool, schema, timeout: '1m' });
    const t = createLimiter({
      name: name(),
      rule: tokenBucket({ limit: 5, period: '1d' }),
      store,
      timeout: '1m',
    });
    const admitted = new Map<string, number>();
    let answered = 0;
    await Promise.all(
      Array.from({ length: 16 }, async (_, caller) => {
        for (let i = 0; i < 40; i++) {
          const key = `k${(caller * 7 + i * 3) % 40}`;
          const d = await t.take(key);
          answered++;
          if (d.allowed) admitted.set(key, (admitted.get(key) ?? 0) + 1);
        }
      }),
    );
    assert.equal(answered, 640);
    for (let k = 0; k < 40; k++) assert.equal(admitted.get(`k${k}`), 5, `k${k}`);
  });

  it('local_day_start (migration 001; no statement calls it since 005) equals src/core/calendar.ts, DST days and repeated midnights included', async () => {
    const zones = [
      'UTC',
      'Europe/Berlin',
      'America/New_York',
      'America/Havana',
      'Asia/Beirut',
      'Australia/Lord_Howe',
      'America/Santiago',
    ];
    for (const zone of zones) {
      const days = new CalendarDays(zone);
      const instants: number[] = [];
      for (let t = Date.UTC(2026, 0, 1); t < Date.UTC(2027, 0, 1); t += 3 * 3_600_000 + 17 * 60_000)
        instants.push(t);
      const { rows } = await pool.query(
        `SELECT floor(extract(epoch FROM "${schema}".local_day_start($2, d)) * 1000)::float8 AS s,
                floor(extract(epoch FROM "${schema}".local_day_start($2, d + 1)) * 1000)::float8 AS e
         FROM (SELECT ((timestamptz 'epoch' + t::float8 * interval '1 millisecond') AT TIME ZONE $2)::date AS d, o
               FROM unnest($1::bigint[]) WITH ORDINALITY AS x(t, o)) y ORDER BY o`,
        [instants, zone],
      );
      instants.forEach((t, i) => {
        assert.deepEqual(
          [rows[i].s, rows[i].e],
          [days.startOf(t), days.endOf(t)],
          `${zone} at ${new Date(t).toISOString()}`,
        );
      });
    }
  });

  describe('accounts', () => {
    let store: PostgresStore;
    /** The report service's quota: 10 a day, under a fresh name. */
    const reportsQuota = () =>
      createLimiter({ name: name(), rule: calendarQuota({ limit: 10 }), store, timeout: '10s' });
    let nextUser = 1000;
    const rows = async (bucket: string) =>
      Number(
        (await pool.query(`SELECT count(*) FROM "${schema}".window_counters WHERE bucket = $1`, [bucket]))
          .rows[0].count,
      );
    const newUser = async () => {
      const id = nextUser++;
      await pool.query(`INSERT INTO "${schema}".users (id) VALUES ($1)`, [id]);
      return id;
    };
    before(() => {
      store = new PostgresStore({ client: pool, schema, users, timeout: '10s' });
    });

    it('an existing user charges the account bucket; a deleted one falls back to the IP bucket', async () => {
      const reports = reportsQuota();
      const id = await newUser();
      const session = await store.takeForAccount(reports, {
        userId: id,
        accountKey: `account:v1:a${id}`,
        anonKey: `ip:a${id}`,
      });
      assert.equal(session.mode, 'session');
      assert.equal(session.decision.remaining, 9);
      await pool.query(`DELETE FROM "${schema}".users WHERE id = $1`, [id]);
      assert.equal(await rows(`account:v1:a${id}`), 0, 'deleting the user deleted the account row');
      const anon = await store.takeForAccount(reports, {
        userId: id,
        accountKey: `account:v1:a${id}`,
        anonKey: `ip:a${id}`,
      });
      assert.equal(anon.mode, 'anon');
      assert.equal(await rows(`ip:a${id}`), 1);
      assert.equal(await rows(`account:v1:a${id}`), 0);
    });

    it('a take racing a deletion that runs first waits, then falls back to anon (real transactions)', async () => {
      const reports = reportsQuota();
      const id = await newUser();
      const deleter = await pool.connect();
      try {
        await deleter.query('BEGIN');
        await deleter.query(`DELETE FROM "${schema}".users WHERE id = $1`, [id]);
        const take = store.takeForAccount(reports, {
          userId: id,
          accountKey: `account:v1:b${id}`,
          anonKey: `ip:b${id}`,
        });
        // The take is blocked on the user's row lock until the deletion commits.
        await waitForLockWaiters(pool, 1);
        await deleter.query('COMMIT');
        assert.equal((await take).mode, 'anon');
      } finally {
        deleter.release();
      }
      assert.equal(await rows(`account:v1:b${id}`), 0);
      assert.equal(await rows(`ip:b${id}`), 1);
    });

    it('a take that runs first is deleted with the user (real transactions)', async () => {
      const reports = reportsQuota();
      const id = await newUser();
      // The take's statement runs inside a transaction held open, so the deletion must wait for it.
      const holder = await pool.connect();
      let commit!: () => void;
      const held: PostgresClient = {
        async query(text, values) {
          await holder.query('BEGIN');
          const result = await holder.query({ text, values: values as unknown[] });
          await new Promise<void>((resolve) => (commit = resolve));
          await holder.query('COMMIT');
          return result.rows;
        },
        transaction: () => Promise.reject(new Error('not used')),
      };
      const heldStore = new PostgresStore({ client: held, schema, users, timeout: '10s', batch: false });
      const heldReports = heldStore.bind(reports.name, reports.rule);
      const take = heldStore.takeForAccount(heldReports, {
        userId: id,
        accountKey: `account:v1:c${id}`,
        anonKey: `ip:c${id}`,
      });
      while (commit === undefined) await new Promise((r) => setTimeout(r, 5));
      const deletion = pool.query(`DELETE FROM "${schema}".users WHERE id = $1`, [id]);
      await waitForLockWaiters(pool, 1);
      commit();
      assert.equal((await take).mode, 'session');
      await deletion;
      holder.release();
      assert.equal(
        await rows(`account:v1:c${id}`),
        0,
        'no orphan: the cascade removed the row written first',
      );
      assert.equal(await rows(`ip:c${id}`), 0);
    });

    it('many takes racing many deletions leave no account row and charge anon exactly as reported', async () => {
      const reports = createLimiter({
        name: name(),
        rule: calendarQuota({ limit: 1000 }),
        store,
      });
      const ids = await Promise.all(Array.from({ length: 20 }, () => newUser()));
      const takes = ids.flatMap((id) =>
        Array.from({ length: 10 }, () =>
          store.takeForAccount(reports, {
            userId: id,
            accountKey: `account:v1:d${id}`,
            anonKey: 'ip:d-shared',
          }),
        ),
      );
      const deletions = ids.map((id) => pool.query(`DELETE FROM "${schema}".users WHERE id = $1`, [id]));
      const results = await Promise.all(takes);
      await Promise.all(deletions);
      const anon = results.filter((r) => r.mode === 'anon').length;
      const { rows: left } = await pool.query(
        `SELECT count(*)::int AS n FROM "${schema}".window_counters WHERE bucket LIKE 'account:v1:d%'`,
      );
      assert.equal(left[0].n, 0);
      const { rows: ip } = await pool.query(
        `SELECT coalesce(sum(count), 0)::int AS n FROM "${schema}".window_counters WHERE bucket = 'ip:d-shared'`,
      );
      assert.equal(ip[0].n, anon);
    });

    it('deleting a user removes every bucket of every secret generation, in every rule; others stay', async () => {
      const quota = reportsQuota();
      const bucket = createLimiter({
        name: name(),
        rule: tokenBucket({ limit: 5, period: '1h' }),
        store,
        timeout: '10s',
      });
      const [id, other] = [await newUser(), await newUser()];
      for (const generation of ['v1:old-secret', 'v1:new-secret']) {
        for (const l of [quota, bucket]) {
          await store.takeForAccount(l, {
            userId: id,
            accountKey: `account:${generation}:${id}`,
            anonKey: 'ip:e',
          });
          await store.takeForAccount(l, {
            userId: other,
            accountKey: `account:${generation}:${other}`,
            anonKey: 'ip:e',
          });
        }
      }
      await quota.take('ip:e');
      const count = async (like: string) =>
        Number(
          (
            await pool.query(
              `SELECT (SELECT count(*) FROM "${schema}".window_counters WHERE bucket LIKE $1) + (SELECT count(*) FROM "${schema}".token_buckets WHERE bucket LIKE $1) AS n`,
              [like],
            )
          ).rows[0].n,
        );
      assert.equal(await count(`account:%:${id}`), 4);
      assert.equal(await store.forgetAccount(id), 4, 'forgetAccount reports the rows it removed');
      await store.takeForAccount(quota, {
        userId: id,
        accountKey: `account:v1:new-secret:${id}`,
        anonKey: 'ip:e',
      });
      await pool.query(`DELETE FROM "${schema}".users WHERE id = $1`, [id]);
      assert.equal(await count(`account:%:${id}`), 0);
      assert.equal(await count(`account:%:${other}`), 4);
      assert.equal(await count('ip:e'), 1);
    });
  });

  it('prune() deletes window rows past their horizon, old per-day quota rows and full token buckets, nothing else', async () => {
    const store = new PostgresStore({
      client: pool,
      schema: runSchema('prune'),
      timeSource: 'app',
      timeout: '10s',
    });
    await store.migrate();
    try {
      const now = Date.now();
      const limiter = (name: string, rule: Rule, at: number) =>
        createLimiter({ name, rule, store, clock: () => at, timeout: '10s' });
      // Per-day quota rows counted before window_counters: pruned by age only.
      const legacy = schemaNames(runSchema('prune')).quotaCounters;
      await pool.query(
        `INSERT INTO ${legacy} (rule, bucket, day, count) VALUES ('q', 'a', current_date - 100, 1), ('q', 'a', current_date - 10, 1)`,
      );
      // Window rows go at their horizon: the end of their window (of the next one, sliding).
      const q = limiter('q', calendarQuota({ limit: 10 }), now);
      const fixedPast = limiter('f', fixedWindow({ limit: 10, window: '1m' }), now - 5 * 60_000);
      const slidingPast = limiter('s', slidingWindow({ limit: 10, window: '1m' }), now - 3 * 60_000);
      const slidingRecent = limiter('s2', slidingWindow({ limit: 10, window: '1h' }), now - 30 * 60_000);
      for (const l of [q, fixedPast, slidingPast, slidingRecent]) await l.take('b');
      const t = limiter('t', tokenBucket({ limit: 1, period: '1s' }), now - 5000);
      const t2 = limiter('t2', tokenBucket({ limit: 1, period: '1d' }), now);
      await t.take('full-again');
      await t2.take('still-empty');
      assert.deepEqual(await store.prune({ olderThan: '90d' }), {
        quotaRows: 1,
        tokenRows: 1,
        windowRows: 2,
        leaseRows: 0,
        resetRows: 0,
      });
      assert.equal((await q.peek('b')).remaining, 9, "the current day's count stays");
      assert.equal((await slidingRecent.peek('b')).remaining, 9, 'a count that still weighs stays');
      assert.equal((await t2.peek('still-empty')).remaining, 0);
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${legacy}`);
      assert.equal(rows[0].n, 1, 'the recent legacy day stays');
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS "${runSchema('prune')}" CASCADE`);
    }
  });

  it('every statement probes its rows by primary key, even before the table has statistics', async () => {
    // With a plain join and no statistics yet, the planner hash-joined against every row of the
    // rule, and each decision cost time in proportion to the table.
    const plans = runSchema('plans');
    const store = new PostgresStore({ client: pool, schema: plans, timeout: '10s' });
    await store.migrate();
    const client = await pool.connect();
    try {
      const n = schemaNames(plans);
      const fill = async (rows: number) => {
        await client.query(
          `INSERT INTO ${n.tokenBuckets} (rule, bucket, tat) SELECT 'r', 'k' || g, 0 FROM generate_series(1, ${rows}) g ON CONFLICT DO NOTHING`,
        );
        await client.query(
          `INSERT INTO ${n.windowCounters} (rule, bucket, window_start, count, previous, expires_at)
           SELECT 'r', 'k' || g, 0, 0, 0, 0 FROM generate_series(1, ${rows}) g ON CONFLICT DO NOTHING`,
        );
      };
      // A new table that autovacuum has not analyzed yet (it waits up to a minute): no column
      // statistics, so the planner guesses that few rows have rule = 'r'.
      for (const table of [n.tokenBuckets, n.windowCounters]) {
        await client.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
      }
      await fill(2_000);
      // Custom plans: the planner sees the values and the stale (empty) statistics.
      await client.query('SET plan_cache_mode = force_custom_plan');
      // Without and with a lockout, whose statements read the same rows.
      const block = { duration: '1m', factor: 2 } as const;
      const ruleSets = [false, true].map((lockouts) =>
        [
          tokenBucket({ limit: 10, period: '1s', ...(lockouts ? { block } : {}) }),
          fixedWindow({ limit: 5, window: '1m', ...(lockouts ? { block } : {}) }),
          slidingWindow({ limit: 5, window: '1m', ...(lockouts ? { block } : {}) }),
          calendarQuota({ limit: 5, per: 'hour', timeZone: 'Europe/Berlin', ...(lockouts ? { block } : {}) }),
          // In the order of the all-or-nothing statement's parameters (by kind).
        ].sort((a, b) => (a.kind < b.kind ? -1 : 1)),
      );
      const keys = Array.from({ length: 15 }, (_, i) => `k${i * 7 + 1}`);
      const timeLeft = 60_000;
      const ones = keys.map(() => 1);
      const fives = keys.map(() => 5);
      const now = Date.now();
      const cases: [string, string, unknown[]][] = [];
      for (const rules of ruleSets) {
        const all: unknown[] = [];
        const lockouts = rules[0]?.block !== undefined;
        const label = lockouts ? ' with a lockout' : '';
        for (const rule of rules) {
          const module = algorithmOf(rule);
          const own = module.bind('r', rule);
          const binding = rule.block === undefined ? own : lockoutBinding(own, rule.block);
          const sql = module.ruleSql(n);
          const statements = ruleStatements(
            lockouts ? lockoutRuleSql(sql) : sql,
            n,
            'store',
            undefined,
            undefined,
            lockouts ? undefined : module.plainTakeSql,
          );
          const params = binding.ruleParams(now);
          // The algorithm's own per-take values (a token bucket's tier: none here).
          const perTake = binding.tierValues?.(undefined) ?? [];
          cases.push([
            `${rule.kind} batch${label}`,
            statements.batch.text,
            [...params, keys, ones, ones, fives, ...perTake.map((value) => keys.map(() => value)), timeLeft],
          ]);
          cases.push([
            `${rule.kind} single${label}`,
            statements.single.text,
            [...params, 'k1', 1, 1, 5, ...perTake, timeLeft],
          ]);
          if (statements.plain !== undefined)
            cases.push([`${rule.kind} lean take`, statements.plain.text, [...params, 'k1', 1, 1, timeLeft]]);
          const entry = binding.entryParams(now).map((value) => keys.map(() => value));
          all.push(
            keys.map((_, i) => all.length * 100 + i),
            keys.map(() => 'r'),
            keys,
            ones,
            fives,
            ...entry,
          );
        }
        const forget = lockouts ? [rules.flatMap(() => keys.map(() => 60_000))] : [];
        cases.push([
          `all or nothing${label}`,
          takeAllStatement(rules.map(algorithmOf), n, 'store', lockouts).text,
          [...all, ...forget, timeLeft],
        ]);
      }
      for (const [label, text, values] of cases) {
        const plan = (await client.query(`EXPLAIN (FORMAT JSON) ${text}`, values)).rows[0]['QUERY PLAN'];
        const reads = relationNodes(plan[0].Plan).filter((node) => node['Node Type'] !== 'ModifyTable');
        assert.ok(reads.length > 0, `${label}: the plan reads the table`);
        for (const node of reads) {
          const how = `${label}: ${node['Relation Name']} read by ${node['Node Type']} on ${node['Index Cond'] ?? node['Recheck Cond']}`;
          assert.match(node['Node Type'], /^(Index Scan|Index Only Scan|Bitmap Heap Scan)$/, how);
          assert.match(String(node['Index Cond'] ?? node['Recheck Cond']), /bucket = /, how);
        }
      }
    } finally {
      client.release();
      await dropSchema(pool, plans);
    }
  });

  describe('failures', () => {
    it('a missing schema is SLUICE_STORE_SCHEMA telling to run migrate()', async () => {
      const store = new PostgresStore({ client: pool, schema: runSchema('missing'), timeout: '10s' });
      const l = store.bind('x', tokenBucket({ limit: 1, period: '1h' }));
      await assert.rejects(
        l.take('k', 1, Date.now(), undefined),
        (e: unknown) => isSluiceError(e, 'SLUICE_STORE_SCHEMA') && /migrate\(\)/.test((e as Error).message),
      );
    });

    it('an unreachable server is SLUICE_STORE_UNAVAILABLE, never a crash or a hang', async () => {
      const dead = testPool({ connectionString: 'postgres://postgres@127.0.0.1:1/test' });
      const store = new PostgresStore({ client: dead, schema, timeout: '10s' });
      const l = store.bind('x', tokenBucket({ limit: 1, period: '1h' }));
      await assert.rejects(l.take('k', 1, Date.now(), undefined), (e: unknown) =>
        isSluiceError(e, 'SLUICE_STORE_UNAVAILABLE'),
      );
      await dead.end();
    });

    it('a statement stuck on a lock is SLUICE_STORE_TIMEOUT (client bound, and server statement_timeout)', async () => {
      const store = new PostgresStore({ client: pool, schema, batch: false });
      const rule = tokenBucket({ limit: 5, period: '1h' });
      const l = store.bind(name(), rule);
      await l.take('locked', 1, Date.now(), undefined);
      const blocker = await pool.connect();
      const serverBound = testPool({ max: 1, statement_timeout: 50 });
      try {
        await blocker.query('BEGIN');
        await blocker.query(`SELECT 1 FROM "${schema}".token_buckets WHERE rule = $1 FOR UPDATE`, [l.name]);
        await assert.rejects(l.take('locked', 1, Date.now(), undefined), (e: unknown) =>
          isSluiceError(e, 'SLUICE_STORE_TIMEOUT'),
        );
        const viaServer = new PostgresStore({
          client: serverBound,
          schema,
          timeout: '10s',
          batch: false,
        }).bind(l.name, rule);
        await assert.rejects(viaServer.take('locked', 1, Date.now(), undefined), (e: unknown) =>
          isSluiceError(e, 'SLUICE_STORE_TIMEOUT'),
        );
      } finally {
        await blocker.query('ROLLBACK');
        blocker.release();
        await serverBound.end();
      }
    });

    it('rejects bad options with SLUICE_CONFIG naming the option', () => {
      const bad: [Record<string, unknown>, RegExp][] = [
        [{ client: pool, schema: 'x"; DROP TABLE users; --' }, /schema/],
        [{ client: pool, users: { table: 'users; --' } }, /users\.table/],
        [{ client: pool, users: { type: 'money' } }, /users\.type/],
        [{ client: pool, timeSource: 'node' }, /PostgresStore timeSource/],
        [{ client: pool, batch: { inFlight: 0 } }, /inFlight/],
        [{ client: {} }, /client/],
        [{ client: pool, unknown: 1 }, /unknown/],
      ];
      for (const [options, pattern] of bad) {
        assert.throws(
          () => new PostgresStore(options as never),
          (e: unknown) =>
            (isSluiceError(e, 'SLUICE_CONFIG') || isSluiceError(e, 'SLUICE_DURATION')) &&
            pattern.test((e as Error).message),
          JSON.stringify(Object.keys(options)),
        );
      }
      assert.throws(
        () => new PostgresStore({ client: pool, timeout: -1 as never }),
        (e: unknown) => isSluiceError(e, 'SLUICE_DURATION'),
      );
    });

    it('bind refuses a rule of a kind it has no module for, naming the kinds it decides', () => {
      const store = new PostgresStore({ client: pool });
      const lookalike = { ...tokenBucket({ limit: 1, period: '1s' }), kind: 'leaky-bucket' };
      for (const rule of [lookalike, {}, null]) {
        assert.throws(
          () => store.bind('x', rule as never),
          (e: unknown) =>
            isSluiceError(e, 'SLUICE_CONFIG') &&
            (e as Error).message ===
              'PostgresStore rule must be a rule of a kind this store decides (token-bucket, fixed-window, sliding-window, calendar-quota, anchored-window)',
        );
      }
    });

    it('refuses the former clock option with SLUICE_CONFIG naming timeSource', () => {
      for (const clock of ['caller', 'server']) {
        assert.throws(
          () => new PostgresStore({ client: pool, clock } as never),
          (e: unknown) =>
            isSluiceError(e, 'SLUICE_CONFIG') &&
            /PostgresStore option clock was renamed/.test((e as Error).message) &&
            /timeSource: "app"/.test((e as Error).message),
        );
      }
      assert.equal(new PostgresStore({ client: pool, timeSource: 'app' }).timeSource, 'app');
      assert.equal(new PostgresStore({ client: pool }).timeSource, 'store');
    });
  });
});

interface PlanNode {
  readonly 'Node Type': string;
  readonly 'Relation Name'?: string;
  readonly 'Index Cond'?: string;
  readonly 'Recheck Cond'?: string;
  readonly Plans?: readonly PlanNode[];
}

/** Every node of an EXPLAIN (FORMAT JSON) plan that reads or writes a sluice table. */
function relationNodes(node: PlanNode): PlanNode[] {
  const own = /^(token_buckets|quota_counters|window_counters)$/.test(node['Relation Name'] ?? '')
    ? [node]
    : [];
  return [...own, ...(node.Plans ?? []).flatMap(relationNodes)];
}
