/**
 * `sluice serve` tells an operator when a limit's store is known to be failing: the limiter's
 * breaker opens after failures in a row, /metrics shows it per rule and limit and /readyz answers
 * 503; once the store is back and a call gets its reply, the breaker closes and both say so.
 * A private redis-server is killed and restarted; bounded waits only.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { redisBinariesMissing, startRedis, type PrivateRedis } from '../support/redis-servers.js';
import { startSluice, type RunningSluice } from './serve-support.js';

const policy = (url: string) => `version: 1
store: { type: redis, url: "${url}", timeout: 200ms }
rules:
  - { name: api, algorithm: token-bucket, limit: 1000, period: 1h, failure: open }
`;
const take = { items: [{ rule: 'api', key: 'k' }] };

async function metricsText(sluice: RunningSluice): Promise<string> {
  const response = await fetch(`${sluice.url}/metrics`);
  return response.text();
}

/** The value of a series of `name` for the rule `api`, or undefined while it is not exposed. */
function seriesValue(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{rule="api",`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** Sends decisions every 100 ms until the breaker gauge reads `value` (at most 15 s). */
async function untilBreaker(sluice: RunningSluice, value: number): Promise<string> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    await sluice.post('/v1/decisions', take);
    const text = await metricsText(sluice);
    if (seriesValue(text, 'sluice_store_breaker_open') === value) return text;
    if (Date.now() > deadline) throw new Error(`the breaker gauge never read ${value}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('sluice serve reports its store breakers', async () => {
  const skip = redisBinariesMissing();
  let redis: PrivateRedis | undefined;
  let sluice: RunningSluice | undefined;

  before(async () => {
    if (skip) return;
    redis = await startRedis();
    sluice = await startSluice(policy(redis.url));
  });
  after(async () => {
    await sluice?.stop();
    await redis?.stop();
  });

  it(
    'opens on a dead store (/metrics 1, /readyz 503) and closes once it answers again',
    { skip },
    async () => {
      const healthy = await untilBreaker(sluice!, 0);
      assert.equal(seriesValue(healthy, 'sluice_store_breaker_openings_total'), 0);
      assert.equal((await sluice!.get('/readyz')).status, 200);

      await redis!.kill();
      const failing = await untilBreaker(sluice!, 1);
      assert.equal(seriesValue(failing, 'sluice_store_breaker_openings_total'), 1);
      assert.equal((await sluice!.get('/readyz')).status, 503);

      await redis!.restart();
      const recovered = await untilBreaker(sluice!, 0);
      assert.equal(seriesValue(recovered, 'sluice_store_breaker_openings_total'), 1);
      const [result] = (await sluice!.post('/v1/decisions', take)).body.results;
      assert.equal(result.status, 200);
    },
  );
});
