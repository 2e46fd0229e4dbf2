/**
 * PostgreSQL decides random sequences of takes under switching per-call tiers exactly as the
 * memory store does (test/core/tier-switch.property.test.ts holds the memory store to the
 * guarantee: a key is never admitted more than the largest burst of its tiers plus the
 * fastest refill), so the statements' migration between tiers is the core's, to the scaled
 * unit. The application's clock decides, injected per take.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type pg from 'pg';
import { MemoryStore, tokenBucket, type BucketTier } from '../../src/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { skipUnlessReachable } from '../support/services.js';
import { createAppSchema, dropSchema, postgresUrl, runSchema, testPool } from '../support/postgres.js';
import { overAdmitted, replaySteps, tierSequence } from '../support/tier-switch.js';

const skip = await skipUnlessReachable('postgres', postgresUrl);
const schema = runSchema('tier_switch');
const own: BucketTier = { limit: 10, periodMs: 60_000, burst: 10 };

describe('PostgreSQL decides switching tiers as the memory store', { skip }, () => {
  let pool: pg.Pool;
  let store: PostgresStore;
  before(async () => {
    pool = testPool();
    await createAppSchema(pool, schema);
    store = new PostgresStore({ client: pool, schema, timeSource: 'app', timeout: '10s' });
    await store.migrate();
  });
  after(() => dropSchema(pool, schema).then(() => pool.end()));

  it('the same decisions, field for field, on random tier sequences, and never more than the largest burst and fastest refill', async () => {
    const rules = [false, true].map((penalty) => tokenBucket({ limit: 10, period: '1m', penalty }));
    const shared = rules.map((rule, i) => store.bind(`plans-${i}`, rule));
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 1 }), tierSequence, async (penalty, steps) => {
        const key = `k${++run}`;
        const memory = new MemoryStore().bind(`plans-${penalty}`, rules[penalty]!);
        const expected = await replaySteps(memory, key, steps, own);
        const actual = await replaySteps(shared[penalty]!, key, steps, own);
        assert.deepEqual(actual.views, expected.views);
        assert.equal(overAdmitted(actual.admitted), undefined);
      }),
      { numRuns: 60 },
    );
  });
});
