/**
 * Where envoyproxy/ratelimit's answer depends on the order of the descriptors, over the real gRPC
 * server: the metadata of the descriptors that passed is merged with the first value of a key
 * kept (upstream's quota-mode test with several services asserts the first service), and one
 * descriptor sent twice in a call is counted in turn, each occurrence seeing the ones before it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { START, descriptor, startEnvoySluice, type EnvoySluice } from './envoy-support.js';
import { Code, structOf, type DecodedResponse } from './wire.js';

const policy = `version: 1
rules: []
envoy:
  dynamicMetadata: true
  domains:
    - domain: order
      descriptors:
        - key: first
          rate_limit: { unit: day, requests_per_unit: 10 }
          metadata: { name: service_1, route: { cluster: a } }
        - key: second
          rate_limit: { unit: day, requests_per_unit: 10 }
          metadata: { name: service_2, route: { cluster: b, zone: z } }
        - key: quota
          quota_mode: true
          rate_limit: { unit: day, requests_per_unit: 1 }
          metadata: { name: service_q1 }
        - key: quota2
          quota_mode: true
          rate_limit: { unit: day, requests_per_unit: 10 }
          metadata: { name: service_q2 }
        - key: k
          rate_limit: { unit: day, requests_per_unit: 3 }
`;

let envoy: EnvoySluice;
before(async () => {
  envoy = await startEnvoySluice(policy);
  envoy.setTime(START + 3_600_000);
});
after(() => envoy.stop());

const call = (...descriptors: [string, string][]) =>
  envoy.call({ domain: 'order', descriptors: descriptors.map((entry) => descriptor(entry)) });
const metadataOf = (r: DecodedResponse) => structOf(r.dynamicMetadata!).metadata;
const statuses = (r: DecodedResponse) => [
  r.overallCode,
  ...r.statuses.map((s) => [s.code, s.limitRemaining]),
];

describe("Envoy's rate limit service: the order of the descriptors, as upstream", () => {
  it('two descriptors with one metadata key: the first keeps its value; two structs under one key merge', async () => {
    const answer = await call(['first', 'm'], ['second', 'm']);
    assert.equal(answer.overallCode, Code.OK);
    assert.deepEqual(metadataOf(answer), { name: 'service_1', route: { cluster: 'a', zone: 'z' } });
    const reversed = await call(['second', 'n'], ['first', 'n']);
    assert.deepEqual(metadataOf(reversed), { name: 'service_2', route: { cluster: 'b', zone: 'z' } });
  });

  it('quota mode with several services: the first of the descriptors that passed names the service', async () => {
    assert.deepEqual(metadataOf(await call(['quota', 'u'])), { name: 'service_q1' });
    // quota is over now; quota2 and second pass, so the request does (not every quota descriptor is over).
    const answer = await call(['quota', 'u'], ['quota2', 'u'], ['second', 'u']);
    assert.deepEqual(
      answer.statuses.map((s) => s.code),
      [Code.OVER_LIMIT, Code.OK, Code.OK],
    );
    assert.equal(answer.overallCode, Code.OK);
    assert.deepEqual(metadataOf(answer), { name: 'service_q2', route: { cluster: 'b', zone: 'z' } });
  });

  it('one descriptor twice: each occurrence is decided in turn; a refused call charges neither', async () => {
    assert.deepEqual(statuses(await call(['k', 'v'], ['k', 'v'])), [Code.OK, [Code.OK, 2], [Code.OK, 1]]);
    // One left: the first occurrence takes it, the second is over, and so is the call.
    assert.deepEqual(statuses(await call(['k', 'v'], ['k', 'v'])), [
      Code.OVER_LIMIT,
      [Code.OK, 0],
      [Code.OVER_LIMIT, 0],
    ]);
    // The refused call charged nothing (sluice's all or nothing): the one left is still there.
    assert.deepEqual(statuses(await call(['k', 'v'])), [Code.OK, [Code.OK, 0]]);
    assert.deepEqual(statuses(await call(['k', 'v'])), [Code.OVER_LIMIT, [Code.OVER_LIMIT, 0]]);
  });

  it('one quota descriptor twice: the first occurrence passes, so the call does (not every quota occurrence is over)', async () => {
    const twice = await call(['quota', 'w'], ['quota', 'w']);
    assert.deepEqual(statuses(twice), [Code.OK, [Code.OK, 0], [Code.OVER_LIMIT, 0]]);
    assert.deepEqual(metadataOf(twice), { name: 'service_q1' });
    assert.deepEqual(statuses(await call(['quota', 'w'])), [Code.OVER_LIMIT, [Code.OVER_LIMIT, 0]]);
  });
});
