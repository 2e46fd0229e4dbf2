/**
 * The PostgreSQL store at its edges: clocks stepped back across midnight, numbers at the bounds,
 * values that must not reach an error, a server that stops answering, a users table that is not
 * there, unbound rules, and erasure of buckets charged through a route's limiter.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { rateLimit } from '../../src/adapters/node/index.js';
import type pg from 'pg';
import {
  MAX_COUNT,
  MAX_PENALTY_COUNT,
  MemoryStore,
  calendarQuota,
  createLimiter,
  fixedWindow,
  isSluiceError,
  manualClock,
  resolveIdentity,
  slidingWindow,
  tokenBucket,
} from '../../src/index.js';
import { isStoreFailure } from '../../src/limiter/failure.js';
import { PostgresRuleBuckets, PostgresStore, type PostgresClient } from '../../src/stores/postgres/index.js';
import { skipUnlessReachable } from '../support/services.js';
import {
  dropSchema,
  postgresUrl,
  runSchema,
  testPool,
  waitForLockWaiters,
  waitOnServerClock,
  openAppSchema,
  closeAppSchema,
} from '../support/postgres.js';

const skip = await skipUnlessReachable('postgres', postgresUrl);
const schema = runSchema('edges');
const users = { schema, table: 'users' };
const DAY = 86_400_000;

describe('PostgresStore at the edges', { skip }, () => {
  let pool: pg.Pool;
  let counter = 0;
  const name = () => `e${++counter}`;

  before(async () => {
    pool = await openAppSchema(schema, users);
  });
  after(() => closeAppSchema(pool, schema));

  describe('calendar quota with a clock stepped back', () => {
    it('a caller clock stepped back across midnight counts on the later day: 5 a day admits 5, not 10', async () => {
      const store = new PostgresStore({ client: pool, schema, timeSource: 'app', timeout: '10s' });
      const clock = manualClock(Date.UTC(2026, 2, 10, 0, 30));
      const quota = createLimiter({
        name: name(),
        rule: calendarQuota({ limit: 5 }),
        store,
        clock,
        timeout: '10s',
      });
      for (let i = 0; i < 3; i++) assert.equal((await quota.take('k')).allowed, true);
      clock.set(Date.UTC(2026, 2, 9, 23, 0)); // back across midnight, an hour before the stored day
      const back = [];
      for (let i = 0; i < 4; i++) back.push(await quota.take('k'));
      assert.deepEqual(
        back.map((d) => d.allowed),
        [true, true, false, false],
      );
      const last = back[3]!;
      assert.equal(last.remaining, 0);
      // Measured from now to the end of the stored day (March 10), which is 25 h 0 min away.
      assert.equal(last.resetMs, Date.UTC(2026, 2, 11) - Date.UTC(2026, 2, 9, 23, 0));
      assert.equal(last.retryAfterMs, last.resetMs);
      assert.equal(last.windowMs, DAY);
      assert.equal((await quota.peek('k')).remaining, 0, 'a peek reads the stored day too');
      clock.set(Date.UTC(2026, 2, 11, 0, 0)); // a later day than the stored one starts fresh
      assert.equal((await quota.take('k')).remaining, 4);
    });

    it('all-or-nothing and account takes count on the later day too', async () => {
      const store = new PostgresStore({ client: pool, schema, timeSource: 'app', users, timeout: '10s' });
      const clock = manualClock(Date.UTC(2026, 5, 2, 0, 10));
      const quota = createLimiter({
        name: name(),
        rule: calendarQuota({ limit: 5, timeZone: 'Europe/Berlin' }),
        store,
        clock,
        timeout: '10s',
      });
      await pool.query(`INSERT INTO "${schema}".users (id) VALUES (501)`);
      const entry = { buckets: quota.buckets, key: 'all', cost: 2, limit: undefined };
      assert.equal((await store.takeAll([entry], clock()))[0]!.remaining, 3);
      for (let i = 0; i < 4; i++) {
        await store.takeForAccount(quota, { userId: 501, accountKey: 'account:v1:x501', anonKey: 'ip:x' });
      }
      clock.set(clock() - DAY); // the previous local day in Berlin
      const [all] = await store.takeAll([entry], clock());
      assert.equal(all!.remaining, 1);
      assert.equal((await store.takeAll([entry], clock()))[0]!.allowed, false);
      const account = await store.takeForAccount(quota, {
        userId: 501,
        accountKey: 'account:v1:x501',
        anonKey: 'ip:x',
      });
      assert.equal(account.mode, 'session');
      assert.equal(account.decision.allowed, true);
      assert.equal(account.decision.remaining, 0);
      assert.equal(
        (await store.takeForAccount(quota, { userId: 501, accountKey: 'account:v1:x501', anonKey: 'ip:x' }))
          .decision.allowed,
        false,
      );
    });

    it("on the server's clock, a row of a later day than the server's today is the one counted", async () => {
      // A server clock that was ahead and then corrected leaves exactly this: a row of tomorrow.
      const store = new PostgresStore({ client: pool, schema, timeout: '10s' });
      const quota = createLimiter({ name: name(), rule: calendarQuota({ limit: 5 }), store, timeout: '10s' });
      await pool.query(
        `INSERT INTO "${schema}".window_counters (rule, bucket, window_start, count, previous, expires_at)
         SELECT $1, 'k', d, 4, 0, d + ${DAY}
         FROM (SELECT (floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint / ${DAY} + 1) * ${DAY} AS d) x`,
        [quota.name],
      );
      const first = await quota.take('k');
      assert.equal(first.allowed, true);
      assert.equal(first.remaining, 0);
      assert.ok(first.resetMs > DAY, 'measured to the end of tomorrow');
      assert.equal((await quota.take('k')).allowed, false);
      const { rows } = await pool.query(
        `SELECT count(*)::int AS n FROM "${schema}".window_counters WHERE rule = $1`,
        [quota.name],
      );
      assert.equal(rows[0].n, 1, "no row was started for the server's today");
    });
  });

  describe('numbers at the bounds', () => {
    it('a per-call limit PostgreSQL cannot hold is SLUICE_ARGUMENT with its SQLSTATE, never a store failure', async () => {
      const store = new PostgresStore({ client: pool, schema, timeout: '10s', batch: false });
      const buckets = store.bind(name(), calendarQuota({ limit: 5 }));
      await assert.rejects(buckets.take('k', 1, Date.now(), 2 ** 64), (e: unknown) => {
        assert.ok(isSluiceError(e, 'SLUICE_ARGUMENT'), String(e));
        assert.equal((e as { sqlState?: string }).sqlState, '22003');
        assert.equal(isStoreFailure(e), false, 'a failure policy never admits it');
        return true;
      });
    });

    it('huge costs and burst × period at the bounds never overflow (exact next to the memory store)', async () => {
      const { default: fc } = await import('fast-check');
      const store = new PostgresStore({ client: pool, schema, timeSource: 'app', timeout: '10s' });
      const memory = new MemoryStore();
      const costs = fc.oneof(
        fc.constant(MAX_COUNT),
        fc.constant(MAX_COUNT - 1),
        fc.constant(0),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 0, max: MAX_COUNT }),
      );
      const rules = fc.oneof(
        // The largest rate per period, and the largest burst the core accepts for a long period.
        fc.constant(tokenBucket({ limit: 1_000_000, period: '1ms', burst: MAX_COUNT })),
        fc.constant(tokenBucket({ limit: 1, period: '1d', burst: 50_000 })),
        fc.constant(tokenBucket({ limit: 7, period: '1h', burst: 1_000_000, penalty: true })),
        fc.constant(calendarQuota({ limit: MAX_COUNT })),
        fc.constant(calendarQuota({ limit: 3, penalty: true })),
        fc.constant(calendarQuota({ limit: MAX_COUNT, per: 'week', penalty: true })),
        fc.constant(fixedWindow({ limit: MAX_COUNT, window: '1d', penalty: true })),
        fc.constant(slidingWindow({ limit: MAX_COUNT, window: '1d', penalty: true })),
      );
      const takes = fc.array(fc.record({ cost: costs, advance: fc.integer({ min: 0, max: 2 * DAY }) }), {
        minLength: 1,
        maxLength: 12,
      });
      await fc.assert(
        fc.asyncProperty(rules, takes, fc.boolean(), async (rule, steps, perCall) => {
          const label = name();
          const pgBuckets = store.bind(label, rule);
          const memBuckets = memory.bind(label, rule);
          let now = Date.UTC(2027, 0, 1);
          for (const { cost, advance } of steps) {
            now += advance;
            const limit = perCall && rule.acceptsCallLimit ? MAX_COUNT : undefined;
            const [got, want] = [
              await pgBuckets.take('k', cost, now, limit),
              await memBuckets.take('k', cost, now, limit),
            ];
            assert.deepEqual(got, want, `cost ${cost}`);
          }
        }),
        { numRuns: 40, seed: 20261201 },
      );
    });
  });

  it('penalty counts stop at MAX_PENALTY_COUNT in every rule that counts per window, as in the core', async () => {
    const store = new PostgresStore({ client: pool, schema, timeSource: 'app', timeout: '10s' });
    const now = Date.UTC(2027, 0, 1, 12);
    for (const rule of [
      fixedWindow({ limit: MAX_COUNT, window: '1h', penalty: true }),
      slidingWindow({ limit: MAX_COUNT, window: '1h', penalty: true }),
      calendarQuota({ limit: MAX_COUNT, per: 'month', penalty: true }),
    ]) {
      const label = name();
      const buckets = store.bind(label, rule);
      // Coalesced and alone: three takes of MAX_COUNT in one statement, then two more.
      await Promise.all([1, 2, 3].map(() => buckets.take('k', MAX_COUNT, now, undefined)));
      for (let i = 0; i < 2; i++)
        assert.equal((await buckets.take('k', MAX_COUNT, now, undefined)).allowed, false);
      const { rows } = await pool.query(
        `SELECT count::float8 AS c FROM "${schema}".window_counters WHERE rule = $1 AND bucket = 'k'`,
        [label],
      );
      assert.equal(rows[0].c, MAX_PENALTY_COUNT, rule.kind);
    }
  });

  describe('no values in errors', () => {
    const values = ['ann@example.com', '203.0.113.7', '2001:db8::1', '9223372036854775808'];
    const scan = (error: unknown) => {
      const seen: string[] = [];
      for (let e: unknown = error; e !== undefined && e !== null; e = (e as { cause?: unknown }).cause) {
        seen.push(String((e as Error).message), inspect(e, { depth: 4 }), JSON.stringify(e) ?? '');
      }
      return seen.join('\n');
    };

    it('takeForAccount and forgetAccount with ids of the wrong type: SLUICE_ARGUMENT naming option and type, no value', async () => {
      const store = new PostgresStore({ client: pool, schema, users, timeout: '10s' });
      const quota = createLimiter({ name: name(), rule: calendarQuota({ limit: 5 }), store, timeout: '10s' });
      const errors: unknown[] = [];
      for (const value of values) {
        const calls: (() => Promise<unknown>)[] = [
          () => store.takeForAccount(quota, { userId: value, accountKey: 'account:v1:a', anonKey: 'ip:a' }),
          () => store.forgetAccount(value),
          () =>
            store.takeForAccount(quota, {
              userId: 1,
              accountKey: 'account:v1:a',
              anonKey: value as never,
              cost: value as never,
            }),
          () =>
            store.takeForAccount(quota, {
              userId: 1,
              accountKey: 'account:v1:a',
              anonKey: 'ip:a',
              limit: value as never,
            }),
          async () => store.accountKey(value, 'account:v1:a'),
        ];
        for (const call of calls) {
          await assert.rejects(call(), (e: unknown) => {
            errors.push(e);
            return isSluiceError(e, 'SLUICE_ARGUMENT');
          });
        }
      }
      for (const error of errors) {
        const text = scan(error);
        for (const value of values) assert.ok(!text.includes(value), `${value} in ${text}`);
        assert.match((error as Error).message, /takeForAccount|forgetAccount|accountKey/);
      }
      assert.match(
        (errors[0] as Error).message,
        /takeForAccount userId must be a whole number within PostgreSQL bigint \(the users\.type option\); received a string/,
      );
    });

    it("a driver error keeps its SQLSTATE and drops PostgreSQL's text, which quotes the value", async () => {
      const store = new PostgresStore({ client: pool, schema, users, timeout: '10s' });
      const quota = store.bind(name(), calendarQuota({ limit: 5 }));
      assert.ok(quota instanceof PostgresRuleBuckets);
      // The rule's buckets send the id unchecked (the store checks it first), as a store without
      // the check did: PostgreSQL's message quotes it ('invalid input syntax for type bigint').
      const error = await quota
        .takeForAccount('ann@example.com', 'account:v1:a', 'ip:a', 1, Date.now(), undefined)
        .catch((e: unknown) => e);
      assert.ok(isSluiceError(error), String(error));
      assert.ok(isSluiceError(error, 'SLUICE_ARGUMENT'), String(error));
      assert.equal((error as { sqlState?: string }).sqlState, '22P02');
      assert.ok(!scan(error).includes('ann@example.com'), scan(error));
    });
  });

  describe('a server that stops answering', () => {
    const variants = [
      { label: 'one statement per take', batch: false as const, poolMax: 20 },
      { label: 'coalesced takes', batch: undefined, poolMax: 20 },
      { label: 'statements queued for a pool of 2', batch: false as const, poolMax: 2 },
    ];
    for (const { label, batch, poolMax } of variants) {
      it(`held row lock (${label}): outstanding driver calls stay bounded, overload is fast, no timed-out take is charged`, async () => {
        const app = `sluice-edges-${label.replaceAll(' ', '-')}-${process.pid}`;
        const takers = testPool({ max: poolMax, application_name: app });
        let outstanding = 0;
        let most = 0;
        const counting: PostgresClient = {
          query(text, values, n) {
            outstanding++;
            most = Math.max(most, outstanding);
            const settled = takers.query({ text, values: values as unknown[], name: n }).then((r) => r.rows);
            settled.then(
              () => outstanding--,
              () => outstanding--,
            );
            return settled;
          },
          transaction: () => Promise.reject(new Error('not used')),
        };
        const store = new PostgresStore({
          client: counting,
          schema,
          timeout: '300ms',
          maxOutstanding: 6,
          ...(batch === false ? { batch } : {}),
        });
        const quota = createLimiter({
          name: name(),
          rule: calendarQuota({ limit: 5 }),
          store,
          timeout: '300ms',
        });
        // The first take opens the driver's connections and prepares the statement on them: on a
        // loaded machine that alone can pass the 300 ms this test bounds a held lock with. A
        // patient store on the same client does it first (two at once, for a pool of two).
        const patient = createLimiter({
          name: quota.name,
          rule: calendarQuota({ limit: 5 }),
          store: new PostgresStore({
            client: counting,
            schema,
            timeout: '10s',
            ...(batch === false ? { batch } : {}),
          }),
          timeout: '10s',
        });
        await Promise.all([patient.peek('warm-a'), patient.peek('warm-b')]);
        assert.equal((await quota.take('k')).remaining, 4);
        const blocker = await pool.connect();
        try {
          await blocker.query('BEGIN');
          await blocker.query(`SELECT 1 FROM "${schema}".window_counters WHERE rule = $1 FOR UPDATE`, [
            quota.name,
          ]);
          const raw = Array.from({ length: 40 }, () =>
            quota.buckets.take('k', 1, Date.now(), undefined).then(
              () => 'charged',
              (e: unknown) => (e as { code?: string }).code,
            ),
          );
          // The bound applies at once: past 6 outstanding statements, takes are refused unsent.
          const overloaded = (await Promise.all(raw.slice(6))).filter((c) => c === 'SLUICE_STORE_OVERLOADED');
          assert.ok(batch !== false ? true : overloaded.length === 34, `${overloaded.length} overloaded`);
          const outcomes = await Promise.all(raw);
          assert.ok(
            outcomes.every((c) => c === 'SLUICE_STORE_TIMEOUT' || c === 'SLUICE_STORE_OVERLOADED'),
            outcomes.join(),
          );
          assert.ok(most <= 6, `at most 6 outstanding, saw ${most}`);
          if (poolMax > 2) await waitForLockWaiters(pool, 1, app);
          // Release the lock only once every deadline has passed on the server's clock.
          await waitOnServerClock(pool, 300);
        } finally {
          await blocker.query('ROLLBACK');
          blocker.release();
        }
        for (let polls = 0; outstanding > 0 && polls < 1000; polls++)
          await new Promise((r) => setTimeout(r, 10));
        assert.equal(outstanding, 0);
        const after = await createLimiter({
          name: quota.name,
          rule: quota.rule,
          store: new PostgresStore({ client: pool, schema, timeout: '10s' }),
          timeout: '10s',
        }).peek('k');
        assert.equal(after.remaining, 4, 'only the take before the lock was charged');
        await takers.end();
      });
    }
  });

  it('migrate() names what is missing and the option naming it', async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [
        { schema, table: 'no_such_users' },
        /users table "[^"]+"\."no_such_users" named by users\.schema and users\.table does not exist/,
      ],
      [
        { schema: `${schema}_nope`, table: 'users' },
        /schema "[^"]+_nope" named by users\.schema does not exist/,
      ],
      [{ schema, table: 'users', column: 'user_id' }, /no column "user_id" \(the users\.column option\)/],
      [{ schema, table: 'users', type: 'uuid' }, /is bigint, but the users\.type option says uuid/],
    ];
    for (const [u, pattern] of cases) {
      const target = runSchema(`mig${++counter}`);
      const store = new PostgresStore({ client: pool, schema: target, users: u });
      try {
        await assert.rejects(store.migrate(), (e: unknown) => {
          assert.ok(isSluiceError(e, 'SLUICE_CONFIG'), String(e));
          assert.match((e as Error).message, pattern);
          assert.doesNotMatch((e as Error).message, /run store\.migrate\(\)/);
          return true;
        });
      } finally {
        await dropSchema(pool, target);
      }
    }
  });

  describe('accounts', () => {
    let nextUser = 7000;
    const newUser = async () => {
      const id = nextUser++;
      await pool.query(`INSERT INTO "${schema}".users (id) VALUES ($1)`, [id]);
      return id;
    };

    it("takeForAccount decides on the limiter's injected clock in caller-clock mode", async () => {
      const store = new PostgresStore({ client: pool, schema, users, timeSource: 'app', timeout: '10s' });
      const clock = manualClock(Date.UTC(2020, 0, 1, 12));
      const quota = createLimiter({
        name: name(),
        rule: calendarQuota({ limit: 2 }),
        store,
        clock,
        timeout: '10s',
      });
      const id = await newUser();
      const take = () =>
        store.takeForAccount(quota, { userId: id, accountKey: `account:v1:c${id}`, anonKey: 'ip:c' });
      const first = await take();
      assert.equal(first.decision.resetMs, 12 * 3_600_000, "to the end of the limiter's day");
      assert.equal((await take()).decision.allowed, true);
      assert.equal((await take()).decision.allowed, false);
      clock.advance('1d');
      assert.equal((await take()).decision.remaining, 1, 'the next day of the injected clock is fresh');
    });

    it('a route limiter through the node adapter charges account rows that deleting the user erases', async () => {
      const store = new PostgresStore({ client: pool, schema, users, timeout: '10s' });
      const quota = createLimiter({
        name: name(),
        rule: calendarQuota({ limit: 10 }),
        store,
        timeout: '10s',
      });
      const burst = createLimiter({
        name: name(),
        rule: tokenBucket({ limit: 5, period: '1h' }),
        store,
        timeout: '10s',
      });
      const userExists = async (userId: unknown) =>
        (await pool.query(`SELECT 1 FROM "${schema}".users WHERE id = $1`, [userId])).rowCount === 1;
      const limit = rateLimit({
        limits: [burst, quota],
        key: async (request) => {
          const identity = await resolveIdentity(request, {
            apiKey: () => null,
            session: () => ({ userId: Number(request.headers['x-user']) }),
            userExists,
            // The store's account key: the row it writes is linked to the user.
            accountBucket: (userId) => store.accountKey(userId, `account:v1:route-${String(userId)}`),
            anonBucket: () => 'ip:route',
          });
          if (!identity.ok) throw identity.error;
          return { key: identity.bucket, authMode: identity.mode };
        },
      });
      const server = createServer((request, response) => {
        void limit(request, response).then((go) => go && response.end('ok'));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      try {
        const [id, other] = [await newUser(), await newUser()];
        const rows = async (user: number) =>
          Number(
            (
              await pool.query(
                `SELECT (SELECT count(*) FROM "${schema}".window_counters WHERE bucket = $1)
                      + (SELECT count(*) FROM "${schema}".token_buckets WHERE bucket = $1) AS n`,
                [`account:v1:route-${user}`],
              )
            ).rows[0].n,
          );
        for (const user of [id, id, other]) {
          const response = await fetch(url, { headers: { 'x-user': String(user) } });
          assert.equal(response.status, 200);
          assert.equal(response.headers.get('x-auth-mode'), 'session');
        }
        assert.equal((await quota.peek(store.accountKey(id, `account:v1:route-${id}`))).remaining, 8);
        assert.equal(await rows(id), 2, 'one row per rule');
        await pool.query(`DELETE FROM "${schema}".users WHERE id = $1`, [id]);
        assert.equal(await rows(id), 0, "deleting the user erased the route's rows");
        assert.equal(await rows(other), 2, 'other users keep theirs');
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it('an account key whose user was deleted meanwhile is decided and writes nothing', async () => {
      const store = new PostgresStore({ client: pool, schema, users, timeout: '10s' });
      const quota = createLimiter({ name: name(), rule: calendarQuota({ limit: 3 }), store, timeout: '10s' });
      const key = store.accountKey(99_999_999, 'account:v1:gone');
      const decision = await quota.take(key);
      assert.equal(decision.allowed, true);
      const { rows } = await pool.query(
        `SELECT count(*)::int AS n FROM "${schema}".window_counters WHERE bucket = 'account:v1:gone'`,
      );
      assert.equal(rows[0].n, 0);
      await assert.rejects(
        store.takeAll([{ buckets: quota.buckets, key, cost: 1, limit: undefined }], Date.now()),
        (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT'),
      );
    });
  });

  it('takeAll refuses an entry list naming one bucket twice, before charging anything', async () => {
    const store = new PostgresStore({ client: pool, schema, timeout: '10s' });
    const quota = store.bind(name(), calendarQuota({ limit: 5 }));
    const other = store.bind(name(), calendarQuota({ limit: 5 }));
    const entry = { buckets: quota, key: 'k', cost: 1, limit: undefined };
    await assert.rejects(
      store.takeAll(
        [entry, { buckets: other, key: 'k', cost: 1, limit: undefined }, { ...entry, cost: 2 }],
        Date.now(),
      ),
      (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT'),
    );
    assert.equal((await quota.take('k', 0, Date.now(), undefined)).remaining, 5);
    assert.equal((await other.take('k', 0, Date.now(), undefined)).remaining, 5);
  });

  it('unbind frees the name; the freed buckets reject with SLUICE_CONFIG', async () => {
    const store = new PostgresStore({ client: pool, schema, users, timeout: '10s' });
    const label = name();
    const old = store.bind(label, calendarQuota({ limit: 5 }));
    await old.take('k', 1, Date.now(), undefined);
    store.unbind(label);
    const config = (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG');
    await assert.rejects(old.take('k', 1, Date.now(), undefined), config);
    await assert.rejects(old.reset('k'), config);
    await assert.rejects(store.takeForAccount(old, { userId: 1, accountKey: 'a', anonKey: 'b' }), config);
    await assert.rejects(
      store.takeAll([{ buckets: old, key: 'k', cost: 1, limit: undefined }], Date.now()),
      config,
    );
    const again = store.bind(label, calendarQuota({ limit: 5 }));
    assert.equal((await again.take('k', 1, Date.now(), undefined)).remaining, 3, 'the rows stayed');
    store.unbind('never-bound');
  });
});
