/**
 * The service's parts on their own: a call is bounded by the store's timeout, else the limiter's
 * (a store that never answers is UNAVAILABLE, not a hang), a failing store fails closed, the proto3 JSON reader never throws anything but a coded
 * error (fuzzed). The top-K summary of detailed_metric values is the shared Space-Saving one
 * (test/server/shared/space-saving.test.ts, weighted as Envoy counts hits).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { SluiceError, isSluiceError } from '../../../src/core/errors.js';
import { MemoryStore } from '../../../src/stores/memory/store.js';
import type { Store } from '../../../src/stores/contract/store.js';
import { EnvoyBuckets } from '../../../src/server/envoy/decide.js';
import { grpcError } from '../../../src/server/envoy/grpc.js';
import { requestFromJson, responseToJson } from '../../../src/server/envoy/json.js';
import { EnvoyMetrics } from '../../../src/server/envoy/metrics.js';
import { EnvoyService, type ServedEnvoy } from '../../../src/server/envoy/service.js';
import { loadPolicyText } from '../../../src/server/policy/load.js';
import { bucketKeys } from '../../../src/server/policy/keys.js';

function served(): ServedEnvoy {
  const loaded = loadPolicyText(
    'version: 1\nrules: []\nenvoy:\n  domains:\n    - domain: d\n      descriptors:\n        - key: k\n          rate_limit: { unit: minute, requests_per_unit: 2 }\n',
    { file: 'p.yaml', env: {} },
  );
  return { domains: loaded.envoy!, settings: loaded.policy.envoy!, keys: bucketKeys([]) };
}

const request = {
  domain: 'd',
  descriptors: [{ entries: [{ key: 'k', value: 'v' }], limit: null, hits_addend: null }],
  hits_addend: 0,
};

/**
 * A stand-in for a store that fails (not a store under test): the memory store's buckets, and a
 * `takeAll` of our making, bounded by `timeoutMs` when given.
 */
function standIn(kind: string, takeAll: Store['takeAll'], timeoutMs?: number): Store {
  const memory = new MemoryStore();
  return {
    kind,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    bind: (name, rule) => memory.bind(name, rule),
    unbind: (name) => memory.unbind(name),
    takeAll,
  };
}

/** The error a call to `store` is rejected with, and how long that took in ms. */
async function failure(store: Store, asked = request): Promise<{ error: unknown; waited: number }> {
  const service = new EnvoyService(new EnvoyBuckets(store, () => 0), new EnvoyMetrics(new Registry()));
  const started = performance.now();
  const error = await service.shouldRateLimit(asked, served()).then(
    () => assert.fail('answered'),
    (e: unknown) => e,
  );
  return { error, waited: performance.now() - started };
}

const never = () => new Promise<never>(() => {});

describe("Envoy's service parts", () => {
  it('a store that never answers makes the call UNAVAILABLE once the store timeout passes', async () => {
    const { error } = await failure(standIn('hung', never, 50));
    assert.ok(isSluiceError(error));
    assert.equal(error.code, 'SLUICE_STORE_TIMEOUT');
    assert.equal(grpcError(error).code, 14);
  });

  it("a store without its own bound is cut at the limiter's default timeout (100 ms)", async () => {
    const { error, waited } = await failure(standIn('hung', never));
    assert.ok(isSluiceError(error, 'SLUICE_STORE_TIMEOUT'));
    assert.ok(waited >= 95 && waited < 1000, `waited ${waited} ms`);
  });

  it("a store's own error fails closed through the limiter: UNAVAILABLE, naming the limit, never the key", async () => {
    // A driver error whose message quotes the key it was sent, as some do.
    const broken = standIn('broken', (entries) =>
      Promise.reject(new Error(`connection lost sending ${entries[0]!.key}`)),
    );
    const value = 'private-value-7';
    const asked = {
      ...request,
      descriptors: [{ ...request.descriptors[0]!, entries: [{ key: 'k', value }] }],
    };
    const { error } = await failure(broken, asked);
    assert.ok(isSluiceError(error, 'SLUICE_STORE_UNAVAILABLE'));
    assert.equal(error.status, 503);
    assert.equal(grpcError(error).code, 14);
    assert.match(error.message, /limit "envoy:minute": the broken store could not decide/);
    assert.ok(!error.message.includes(value));
    assert.ok(!String((error.cause as Error).message).includes(value));
  });

  it('decides on the memory store with the same arithmetic, and answers proto3 JSON', async () => {
    const service = new EnvoyService(
      new EnvoyBuckets(new MemoryStore(), () => Date.UTC(2026, 0, 1, 0, 0, 45)),
      new EnvoyMetrics(new Registry()),
    );
    const first = responseToJson(await service.shouldRateLimit(request, served()));
    assert.deepEqual(first.statuses, [
      {
        code: 'OK',
        currentLimit: { unit: 'MINUTE', requestsPerUnit: 2 },
        limitRemaining: 1,
        durationUntilReset: '15s',
      },
    ]);
    await service.shouldRateLimit(request, served());
    const third = responseToJson(await service.shouldRateLimit(request, served()));
    assert.equal(third.overallCode, 'OVER_LIMIT');
    assert.equal(typeof third.rawBody, 'string');
  });

  it('reads proto3 JSON by either name, and refuses anything else with a coded error naming no value', () => {
    assert.deepEqual(
      requestFromJson({
        domain: 'd',
        hits_addend: '3',
        descriptors: [
          { entries: [{ key: 'k' }], hitsAddend: 0, limit: { requests_per_unit: 4, unit: 'HOUR' } },
        ],
      }),
      {
        domain: 'd',
        hits_addend: 3,
        descriptors: [
          {
            entries: [{ key: 'k', value: '' }],
            hits_addend: { value: 0 },
            limit: { requests_per_unit: 4, unit: 'HOUR' },
          },
        ],
      },
    );
    assert.throws(() => requestFromJson({ domain: 'd', hitsAddend: 1, hits_addend: 1 }), SluiceError);
    assert.throws(
      () => requestFromJson({ domain: 'secret-value', descriptors: [{ entries: [{ key: 7 }] }] }),
      (e: Error) => !e.message.includes('secret-value'),
    );
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        try {
          const parsed = requestFromJson(value);
          assert.equal(typeof parsed.domain, 'string');
        } catch (error) {
          assert.ok(isSluiceError(error) && error.status === 400, String(error));
        }
      }),
      { numRuns: 2000 },
    );
    const shaped = fc.record(
      {
        domain: fc.oneof(fc.string(), fc.integer()),
        descriptors: fc.array(
          fc.record(
            {
              entries: fc.array(
                fc.record({ key: fc.oneof(fc.string(), fc.constant(null)), value: fc.string() }),
              ),
              hitsAddend: fc.oneof(fc.nat(), fc.string(), fc.integer()),
              limit: fc.record({ requestsPerUnit: fc.integer(), unit: fc.oneof(fc.string(), fc.integer()) }),
            },
            { requiredKeys: [] },
          ),
        ),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(shaped, (value) => {
        try {
          requestFromJson(value);
        } catch (error) {
          assert.ok(isSluiceError(error) && error.status === 400, String(error));
        }
      }),
      { numRuns: 2000 },
    );
  });
});
