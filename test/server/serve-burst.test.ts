/**
 * `sluice serve` under a burst on a healthy store: 4,000 concurrent decisions for one key of a
 * `failure: open` rule (limit 100) on real Redis with the store's default options. Decisions that
 * time out in sluice's own queue while Redis keeps answering are load (a 503 with Retry-After),
 * never admitted as fail-open; at most the limit is admitted.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { deleteKeys, ioredisClient } from '../support/redis-clients.js';
import { redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { startSluice, type RunningSluice } from './serve-support.js';

const skip = await skipUnlessReachable('Redis', redisUrl);
const prefix = `sluice-test:${runId}:serve-burst:`;
const CONCURRENT = 4_000;

describe('sluice serve: a burst of one key on a healthy Redis', { skip }, () => {
  let sluice: RunningSluice;
  let redis: Redis;
  before(async () => {
    redis = await ioredisClient(redisUrl);
    sluice = await startSluice(
      `version: 1
store: { type: redis, url: "\${REDIS_URL}", prefix: "${prefix}" }
rules:
  - { name: comfort, failure: open, algorithm: token-bucket, limit: 100, period: 1h }
`,
      [],
      { REDIS_URL: redisUrl },
    );
  });
  after(async () => {
    await sluice?.stop();
    await deleteKeys(redis, `${prefix}*`);
    await redis.quit();
  });

  it(`${CONCURRENT} concurrent decisions, failure open: at most 100 admitted, none fail-open, the rest 429 or 503`, async () => {
    // Straight through fetch rather than the support client: 4,000 requests at once on a busy
    // machine may need longer than its 10 s per request; still bounded.
    sluice.sensitive('one-key');
    const body = JSON.stringify({ items: [{ rule: 'comfort', key: 'one-key' }] });
    const replies = await Promise.all(
      Array.from({ length: CONCURRENT }, async () => {
        const response = await fetch(`${sluice.url}/v1/decisions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
          signal: AbortSignal.timeout(90_000),
        });
        return { status: response.status, body: await response.json() };
      }),
    );
    const tally = { admitted: 0, refused: 0, unavailable: 0, failOpen: 0, other: 0 };
    for (const reply of replies) {
      assert.equal(reply.status, 200, 'the API call itself succeeds');
      const result = reply.body.results[0];
      const sources = (result.decisions ?? []).map((d: { source: string }) => d.source);
      if (sources.includes('fail-open')) tally.failOpen++;
      if (result.status === 200) tally.admitted++;
      else if (result.status === 429) tally.refused++;
      else if (result.status === 503) tally.unavailable++;
      else tally.other++;
    }
    const seen = JSON.stringify(tally);
    assert.equal(tally.failOpen, 0, `nothing admitted as fail-open while Redis answers: ${seen}`);
    assert.ok(tally.admitted <= 100, `at most the limit admitted: ${seen}`);
    assert.equal(tally.other, 0, seen);
    assert.equal(tally.admitted + tally.refused + tally.unavailable, CONCURRENT, seen);
  });
});
