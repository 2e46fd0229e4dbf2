/**
 * /readyz on PostgreSQL, with the server in this process: a flood of anonymous readiness calls
 * costs the store a bounded number of statements (counted on the driver) and never takes a
 * connection a decision waits for, so no decision of a `failure: open` rule fails open; a lock
 * that stalls decisions makes /readyz say so; the decisions' connections are open (and their
 * statements planned) before the server prints its address.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createServerLog } from '../../src/server/serve/log.js';
import { serve, type RunningServer } from '../../src/server/serve/start.js';
import { READY_INTERVAL_MS } from '../../src/server/serve/readiness.js';
import { DECISION_CONNECTIONS } from '../../src/server/serve/store.js';
import { dropSchema, runSchema, testPool } from '../support/postgres.js';
import { postgresUrl, skipUnlessReachable } from '../support/services.js';
import { policyFile } from './cli-support.js';

/** Counts the readiness statements every pg client of this process sends (old and new forms). */
function countReadinessStatements(): { count(): number; reset(): void; restore(): void } {
  const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = prototype.query;
  let count = 0;
  prototype.query = function (this: unknown, ...args: unknown[]) {
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: unknown } | undefined)?.text;
    if (typeof text === 'string' && /^SELECT 1( FROM |$)/.test(text)) count++;
    return original.apply(this, args);
  };
  return {
    count: () => count,
    reset: () => (count = 0),
    restore: () => (prototype.query = original),
  };
}

async function startServer(schema: string, timeout: string): Promise<RunningServer> {
  const config = policyFile(
    `version: 1
store: { type: postgres, url: "\${DATABASE_URL}", schema: ${schema}, timeout: ${timeout} }
rules:
  - { name: open, algorithm: token-bucket, limit: 1000, period: 1h, failure: open }
`,
  );
  return serve({
    config,
    host: '127.0.0.1',
    port: 0,
    env: { DATABASE_URL: postgresUrl },
    out: () => {},
    log: createServerLog({ write: () => {} }),
  });
}

const decide = async (url: string, key: string) => {
  const response = await fetch(`${url}/v1/decisions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ items: [{ rule: 'open', key }] }),
  });
  return (await response.json()) as { results: { status: number; decisions: { source: string }[] }[] };
};

/** Polls /readyz (at most 40 times, a quarter interval apart) until it answers `status`. */
async function readinessBecomes(url: string, status: number): Promise<boolean> {
  for (let polls = 0; polls < 40; polls++) {
    const response = await fetch(`${url}/readyz`);
    await response.arrayBuffer();
    if (response.status === status) return true;
    await new Promise((resolve) => setTimeout(resolve, READY_INTERVAL_MS / 4));
  }
  return false;
}

describe('sluice serve: /readyz on PostgreSQL', async () => {
  const skip = await skipUnlessReachable('PostgreSQL', postgresUrl);
  const schema = runSchema('readyz');
  const counter = countReadinessStatements();
  let server: RunningServer;
  const pool = skip ? undefined : testPool();

  before(async () => {
    if (skip) return;
    server = await startServer(schema, '2s');
  });
  after(async () => {
    counter.restore();
    await server?.close();
    if (pool === undefined) return;
    await dropSchema(pool, schema);
    await pool.end();
  });

  it("the decisions' connections are open before the address is printed", { skip }, async () => {
    const { rows } = await pool!.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'sluice' AND datname = current_database()
         AND backend_start < now()`,
    );
    assert.equal(rows[0].n, DECISION_CONNECTIONS);
  });

  it(
    '512 concurrent /readyz calls: no decision fails open, the store sees a bounded number of checks',
    { skip },
    async () => {
      counter.reset();
      const started = performance.now();
      const flood = Array.from({ length: 512 }, () =>
        fetch(`${server.url}/readyz`).then(async (r) => (await r.arrayBuffer(), r.status)),
      );
      const decisions = Array.from({ length: 23 }, (_, i) => decide(server.url, `k${i % 5}`));
      const [statuses, results] = await Promise.all([Promise.all(flood), Promise.all(decisions)]);
      const elapsed = performance.now() - started;
      assert.deepEqual(new Set(statuses), new Set([200]));
      const sources = results.flatMap((r) => r.results.map((x) => `${x.status} ${x.decisions[0]!.source}`));
      assert.deepEqual(
        sources,
        Array.from({ length: 23 }, () => '200 store'),
      );
      // One check per interval at most (and one running at its start).
      assert.ok(
        counter.count() <= Math.floor(elapsed / READY_INTERVAL_MS) + 1,
        `${counter.count()} readiness statements in ${Math.round(elapsed)} ms`,
      );
    },
  );

  it(
    'a lock that stalls decisions makes /readyz answer 503; it answers 200 once the lock is gone',
    { skip },
    async () => {
      const holder = await pool!.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(`LOCK TABLE "${schema}".token_buckets IN ACCESS EXCLUSIVE MODE`);
        assert.equal(await readinessBecomes(server.url, 503), true);
        const [stalled] = (await decide(server.url, 'locked')).results;
        // The decision waited for the lock past its deadline (answered by the failure policy).
        assert.ok(!(stalled!.status === 200 && stalled!.decisions[0]?.source === 'store'));
      } finally {
        await holder.query('ROLLBACK');
        holder.release();
      }
      assert.equal(await readinessBecomes(server.url, 200), true);
    },
  );
});
