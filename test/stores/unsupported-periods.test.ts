/**
 * Redis and PostgreSQL count calendar quotas per day only, for now. A quota per hour, week or
 * month bound to either must be refused when it is bound, not counted per day without a word.
 * Binding talks to no server, so the clients here never connect.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { Redis } from 'ioredis';
import { calendarQuota, isSluiceError } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';

describe('shared stores refuse calendar periods they cannot count yet', () => {
  it('RedisStore and PostgresStore refuse a calendarQuota per hour, week or month at bind, and accept per day', async () => {
    const redis = new Redis({ lazyConnect: true });
    const pool = new pg.Pool({ max: 1 });
    try {
      const stores = [new RedisStore({ client: redis }), new PostgresStore({ client: pool })];
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
      redis.disconnect();
      await pool.end();
    }
  });
});
