/**
 * Envoy's rate limit service in operation, the CLI as a child process over real gRPC: the global
 * shadow switch, dynamic metadata and legacy headers; no configuration and a failing store
 * (UNAVAILABLE, never OVER_LIMIT, health NOT_SERVING); Redis and PostgreSQL stores; --envoy-config,
 * a reload that keeps every count, and `sluice check` on a file upstream rejects.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { policyFile, runSluice } from '../cli-support.js';
import { deleteKeys, ioredisClient } from '../../support/redis-clients.js';
import { dropSchema, runSchema, testPool } from '../../support/postgres.js';
import { postgresUrl, redisUrl, runId, skipUnlessReachable } from '../../support/services.js';
import { START, descriptor, startEnvoySluice } from './envoy-support.js';
import { Code } from './wire.js';

const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url));
const header = (headers: [string, string][], name: string) => headers.find(([k]) => k === name)?.[1];

const domain = `  domains:
    - domain: d
      descriptors:
        - key: k
          rate_limit: { unit: day, requests_per_unit: 3 }
          metadata: { service_with_quota: { name: svc } }
        - key: other
          rate_limit: { unit: day, requests_per_unit: 100 }
`;

describe("Envoy's rate limit service: settings and failures", () => {
  it('the global shadow switch answers OK overall and keeps OVER_LIMIT statuses; dynamic metadata never carries values', async () => {
    const envoy = await startEnvoySluice(
      `version: 1\nrules: []\nenvoy:\n  shadowMode: true\n  dynamicMetadata: true\n  headers: legacy\n${domain}`,
    );
    try {
      const ask = { domain: 'd', descriptors: [descriptor(['k', 'value-of-k']), descriptor(['other', 'o'])] };
      const first = await envoy.call(ask);
      assert.equal(header(first.responseHeaders, 'x-ratelimit-remaining'), '2');
      const metadata = first.dynamicMetadata!.toString('latin1');
      assert.ok(metadata.includes('service_with_quota') && metadata.includes('svc'));
      assert.ok(metadata.includes('other') && !metadata.includes('value-of-k'));
      await envoy.call(ask);
      await envoy.call(ask);
      const over = await envoy.call(ask);
      assert.equal(over.overallCode, Code.OK);
      assert.deepEqual(
        over.statuses.map((s) => s.code),
        [Code.OVER_LIMIT, Code.OK],
      );
      assert.equal(over.rawBody, '');
      assert.equal(header(over.responseHeaders, 'x-ratelimit-remaining'), '0');
    } finally {
      await envoy.stop();
    }
  });

  it('POST /json asks for a token of the decide scope when the policy has tokens', async () => {
    const token = 'a-token-of-the-decide-scope';
    const envoy = await startEnvoySluice(
      `version: 1\nauth:\n  tokens: [{ token: ${token}, scopes: [decide] }]\nrules: []\nenvoy:\n${domain}`,
    );
    try {
      const body = { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'json-auth' }] }] };
      assert.equal((await envoy.sluice.post('/json', body)).status, 401);
      const allowed = await envoy.sluice.post('/json', body, { authorization: `Bearer ${token}` });
      assert.deepEqual([allowed.status, allowed.body.statuses[0].limitRemaining], [200, 2]);
    } finally {
      await envoy.stop();
    }
  });

  it('without any domain: UNAVAILABLE, health NOT_SERVING, /json 503', async () => {
    const envoy = await startEnvoySluice('version: 1\nrules: []\nenvoy:\n  domains: []\n');
    try {
      const error = await envoy.callError({ domain: 'd', descriptors: [descriptor(['k', 'v'])] });
      assert.deepEqual([error.code, error.details], [14, 'no rate limit configuration loaded']);
      assert.equal(await envoy.health(), 2);
      const json = await envoy.sluice.post('/json', {
        domain: 'd',
        descriptors: [{ entries: [{ key: 'k' }] }],
      });
      assert.deepEqual([json.status, json.body.code], [503, 'rate_limit_unavailable']);
    } finally {
      await envoy.stop();
    }
  });

  it('a store that fails is UNAVAILABLE at once, never OVER_LIMIT; health NOT_SERVING', async () => {
    const envoy = await startEnvoySluice(
      `version: 1\nstore: { type: redis, url: "redis://127.0.0.1:1", timeout: 200ms }\nrules: []\nenvoy:\n${domain}`,
    );
    try {
      const error = await envoy.callError({ domain: 'd', descriptors: [descriptor(['k', 'v'])] }, 5000);
      assert.equal(error.code, 14);
      assert.equal(await envoy.health('ratelimit'), 2);
      const metrics = await fetch(`${envoy.sluice.url}/metrics`).then((r) => r.text());
      assert.match(metrics, /sluice_envoy_calls_total\{result="unavailable"\} 1/);
      assert.match(
        envoy.sluice.output(),
        /"event":"store-failure","service":"envoy","failures":1,"error":"SluiceError","code":"SLUICE_STORE_/,
      );
    } finally {
      await envoy.stop();
    }
  });

  it('serves --envoy-config, and a reload on SIGHUP keeps every count', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-envoy-config-'));
    const file = join(dir, 'limits.yaml');
    writeFileSync(
      file,
      'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n',
    );
    const envoy = await startEnvoySluice('version: 1\nrules: []\n', [
      '--grpc-port',
      '0',
      '--envoy-config',
      dir,
    ]);
    try {
      const ask = { domain: 'd', descriptors: [descriptor(['k', 'rl-count'])] };
      await envoy.call(ask);
      assert.equal((await envoy.call(ask)).statuses[0]!.limitRemaining, 3);
      const examples = await envoy.call({
        domain: 'mongo_cps',
        descriptors: [descriptor(['database', 'users'])],
      });
      assert.deepEqual(examples.statuses, [{ code: Code.OK, limitRemaining: 0 }]);
      writeFileSync(
        file,
        'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 10 }\n',
      );
      envoy.sluice.child.kill('SIGHUP');
      await waitFor(() => envoy.sluice.output().includes('"event":"reload"'));
      assert.equal((await envoy.call(ask)).statuses[0]!.limitRemaining, 7);
      envoy.setTime(START + 3_600_000);
      assert.equal((await envoy.call(ask)).statuses[0]!.limitRemaining, 9);
    } finally {
      await envoy.stop();
    }
  });

  it('sluice check and sluice serve refuse a file upstream rejects, with its reason at its line', async () => {
    const policy = policyFile(`version: 1\nrules: []\nenvoy:\n  domains: [${fixtures}../bad-unit.yaml]\n`);
    const bad = join(fixtures, '..', 'bad-unit.yaml');
    const checked = await runSluice(['check', policy]);
    assert.equal(checked.code, 1);
    assert.equal(checked.stderr.trim(), `${bad}:6:13: invalid rate limit unit 'foo'`);
    const served = await runSluice(['serve', '--config', policy, '--port', '0', '--grpc-port', '0']);
    assert.equal(served.code, 1);
    assert.ok(served.stderr.includes("invalid rate limit unit 'foo'"));
  });
});

describe("Envoy's rate limit service on Redis", async () => {
  const skip = await skipUnlessReachable('Redis', redisUrl);
  const prefix = `sluice-envoy-${runId}:`;
  after(async () => {
    if (skip) return;
    const client = await ioredisClient(redisUrl);
    await deleteKeys(client, `${prefix}*`);
    client.disconnect();
  });

  it('counts on the shared store: two servers share a counter, all or nothing', { skip }, async () => {
    // With a pseudonym secret, the store holds an HMAC of each counter, never a value as sent.
    const secret = `clients: { pseudonymSecret: "envoy-${runId}-a-secret-of-at-least-32-bytes" }`;
    const policy = `version: 1\nstore: { type: redis, url: "${redisUrl}", prefix: "${prefix}" }\n${secret}\nrules: []\nenvoy:\n${domain}`;
    const [a, b] = await Promise.all([startEnvoySluice(policy), startEnvoySluice(policy)]);
    try {
      const ask = {
        domain: 'd',
        descriptors: [descriptor(['other', 'shared']), descriptor(['k', 'shared'])],
      };
      assert.equal((await a.call(ask)).statuses[1]!.limitRemaining, 2);
      assert.equal((await b.call(ask)).statuses[1]!.limitRemaining, 1);
      assert.equal((await a.call(ask)).statuses[1]!.limitRemaining, 0);
      const refused = await b.call(ask);
      assert.deepEqual([refused.overallCode, refused.statuses[0]!.limitRemaining], [Code.OVER_LIMIT, 96]);
      // The refused request charged neither descriptor.
      const other = await a.call({ domain: 'd', descriptors: [descriptor(['other', 'shared'])] });
      assert.equal(other.statuses[0]!.limitRemaining, 96);
      const client = await ioredisClient(redisUrl);
      const keys = await client.keys(`${prefix}*`);
      client.disconnect();
      assert.ok(keys.length >= 2 && keys.every((k) => !k.includes('shared')), 'pseudonymous keys');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});

describe("Envoy's rate limit service on PostgreSQL", async () => {
  const skip = await skipUnlessReachable('PostgreSQL', postgresUrl);
  const schema = runSchema('envoy');
  after(async () => {
    if (skip) return;
    const pool = testPool();
    await dropSchema(pool, schema);
    await pool.end();
  });

  it('counts on the shared store, the token-quota debit past the limit included', { skip }, async () => {
    const envoy = await startEnvoySluice(
      `version: 1\nstore: { type: postgres, url: "${postgresUrl}", schema: ${schema} }\nrules: []\nenvoy:\n${domain}`,
    );
    try {
      const check = { domain: 'd', descriptors: [{ ...descriptor(['k', 'pg']), hitsAddend: 0 }] };
      const debit = (n: number) => ({
        domain: 'd',
        descriptors: [{ ...descriptor(['k', 'pg']), hitsAddend: n }],
      });
      assert.equal((await envoy.call(check)).statuses[0]!.limitRemaining, 3);
      assert.equal((await envoy.call(debit(2))).statuses[0]!.limitRemaining, 1);
      assert.equal((await envoy.call(debit(4))).overallCode, Code.OVER_LIMIT);
      assert.equal((await envoy.call(check)).overallCode, Code.OVER_LIMIT);
    } finally {
      await envoy.stop();
    }
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  const end = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
