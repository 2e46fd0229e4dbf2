/**
 * A receipt from before its key's last reset refunds nothing on PostgreSQL: the reset already
 * gave the key a new bucket, and giving the old charge back too would admit more than the limit.
 * Limit 5, one reset, all in one instant: 10 admitted (5 before the reset, 5 after), where
 * refunding the 5 old receipts admitted 15. Every algorithm on the application's time (a manual
 * clock), the token bucket and the fixed window on the store's, an account key; a receipt taken
 * after the reset still refunds; a long per-call tier's old receipt refunds nothing once prune()
 * forgot the reset.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { createLimiter, manualClock, tokenBucket } from '../../src/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { skipUnlessReachable } from '../support/services.js';
import { closeAppSchema, openAppSchema, postgresUrl, runSchema } from '../support/postgres.js';
import {
  RESET_START,
  admittedAroundReset,
  forgottenResetCase,
  refundAfterResetCases,
} from '../support/refund-after-reset.js';

const skip = await skipUnlessReachable('postgres', postgresUrl);
const schema = runSchema('resetrefund');
const users = { schema, table: 'users' };
describe('refunds after a reset, PostgreSQL store', { skip }, () => {
  let pool: pg.Pool;
  let counter = 0;
  const name = () => `r${++counter}`;

  before(async () => {
    pool = await openAppSchema(schema, users);
  });
  after(async () => {
    await closeAppSchema(pool, schema);
  });

  function store(timeSource: 'app' | 'store'): PostgresStore {
    return new PostgresStore({ client: pool, schema, users, timeSource, timeout: '10s' });
  }

  refundAfterResetCases((rule, clock) =>
    createLimiter({
      name: name(),
      rule,
      store: store(clock === undefined ? 'store' : 'app'),
      ...(clock ? { clock } : {}),
    }),
  );

  it('an account key: limit 5 and one reset in one instant admit 10, not 15', async () => {
    const shared = store('app');
    await pool.query(`INSERT INTO "${schema}".users (id) VALUES (4242)`);
    const limiter = createLimiter({
      name: name(),
      rule: tokenBucket({ limit: 5, period: '1h' }),
      store: shared,
      clock: manualClock(RESET_START),
    });
    assert.equal(await admittedAroundReset(limiter, shared.accountKey(4242, 'acct-4242')), 10);
  });

  forgottenResetCase(
    'a take under a per-call tier longer than a reset is remembered: once the reset is forgotten, an old receipt still refunds nothing',
    (rule, clock) => createLimiter({ name: name(), rule, store: store('app'), clock }),
    async (limiter) => {
      // The reset's row expired at its horizon (about an hour): prune() deletes it, as this does.
      const forgot = await pool.query(`DELETE FROM "${schema}".bucket_resets WHERE rule = $1`, [
        limiter.name,
      ]);
      assert.equal(forgot.rowCount, 1);
    },
  );
});
