/**
 * PostgreSQL counts calendar quotas per day only, for now. A quota per hour, week or month bound
 * to it must be refused when it is bound, not counted per day without a word. Binding talks to
 * no server, so the client here never connects.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { calendarQuota, isSluiceError } from '../../src/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';

describe('shared stores refuse calendar periods they cannot count yet', () => {
  it('PostgresStore refuses a calendarQuota per hour, week or month at bind, and accept per day', async () => {
    const pool = new pg.Pool({ max: 1 });
    try {
      const stores = [new PostgresStore({ client: pool })];
      for (const store of stores) {
        for (const per of ['hour', 'week', 'month'] as const) {
          assert.throws(
            () => store.bind(`quota-${per}`, calendarQuota({ limit: 5, per })),
            (e) => isSluiceError(e, 'SLUICE_CONFIG') && /per hour, week or month/.test((e as Error).message),
          );
        }
        assert.equal(store.bind('quota-day', calendarQuota({ limit: 5, per: 'day' })).name, 'quota-day');
      }
    } finally {
      await pool.end();
    }
  });
});
