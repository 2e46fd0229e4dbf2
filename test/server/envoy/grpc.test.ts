/**
 * `sluice serve` answers Envoy's rate limit service over real gRPC, the CLI as a child process
 * and a client that plays Envoy, on a fixed clock: every field of the request and the response,
 * the window arithmetic, and the choices where sluice differs from envoyproxy/ratelimit.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { START, descriptor, startEnvoySluice, type EnvoySluice } from './envoy-support.js';
import { Code, Unit, type DecodedResponse } from './wire.js';

const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url));

/** The configuration matching the reference's test vectors, and envoyproxy/ratelimit's example. */
const policy = `version: 1
rules: []
envoy:
  domains:
    - ${fixtures}example.yaml
    - domain: edge
      descriptors:
        - key: remote_address
          rate_limit: { unit: second, requests_per_unit: 10 }
        - key: route
          value: login
          descriptors:
            - key: user
              rate_limit: { unit: minute, requests_per_unit: 5 }
        - key: header_match
          value: post
          descriptors:
            - key: masked_remote_address
              rate_limit: { unit: minute, requests_per_unit: 20 }
        - key: weight
          rate_limit: { unit: minute, requests_per_unit: 10 }
        - key: tokens
          rate_limit: { unit: minute, requests_per_unit: 2 }
        - key: quota
          quota_mode: true
          rate_limit: { unit: hour, requests_per_unit: 1 }
        - key: detailed
          detailed_metric: true
          rate_limit: { unit: day, requests_per_unit: 1000 }
        - key: bursty
          rate_limit: { unit: minute, requests_per_unit: 60 }
          sluice: { algorithm: token-bucket, burst: 3 }
`;

let envoy: EnvoySluice;
/** Each test moves to a minute of its own, so that no window of one test is seen by another. */
let minute = 0;
const freshMinute = () => {
  minute += 2;
  const at = START + minute * 60_000;
  envoy.setTime(at);
  return at;
};

const codes = (r: DecodedResponse) => r.statuses.map((s) => s.code);
const header = (r: DecodedResponse, name: string) => r.responseHeaders.find(([k]) => k === name)?.[1];

describe("Envoy's rate limit service over gRPC", () => {
  before(async () => {
    envoy = await startEnvoySluice(policy);
  });
  after(async () => {
    await envoy.stop();
  });

  it("answers the reference's test vectors in descriptor order, with limits, remaining and resets", async () => {
    freshMinute();
    const login = await envoy.call({
      domain: 'edge',
      descriptors: [
        descriptor(['remote_address', '203.0.113.7']),
        descriptor(['route', 'login'], ['user', 'alice']),
        descriptor(['header_match', 'post'], ['masked_remote_address', '203.0.113.7/32']),
      ],
      hitsAddend: 0,
    });
    assert.equal(login.overallCode, Code.OK);
    assert.deepEqual(login.statuses, [
      {
        code: Code.OK,
        currentLimit: { name: '', requestsPerUnit: 10, unit: Unit.SECOND },
        limitRemaining: 9,
        durationUntilReset: 1,
      },
      {
        code: Code.OK,
        currentLimit: { name: '', requestsPerUnit: 5, unit: Unit.MINUTE },
        limitRemaining: 4,
        durationUntilReset: 60,
      },
      {
        code: Code.OK,
        currentLimit: { name: '', requestsPerUnit: 20, unit: Unit.MINUTE },
        limitRemaining: 19,
        durationUntilReset: 60,
      },
    ]);
    assert.equal(header(login, 'ratelimit-policy')?.includes('"edge.remote_address";q=10;w=1'), true);
    const v6 = await envoy.call({
      domain: 'edge',
      descriptors: [
        descriptor(['remote_address', '2001:db8:1:2:a:b:c:d']),
        descriptor(['header_match', 'post'], ['masked_remote_address', '2001:db8:1:2::/64']),
      ],
    });
    assert.deepEqual(codes(v6), [Code.OK, Code.OK]);
    assert.equal(v6.statuses[1]!.limitRemaining, 19);
  });

  it('counts fixed windows aligned to the epoch: N admitted, then OVER_LIMIT with the 429 contract, then a new window', async () => {
    const at = freshMinute();
    envoy.setTime(at + 250);
    const ask = () =>
      envoy.call({ domain: 'edge', descriptors: [descriptor(['remote_address', '198.51.100.1'])] });
    for (let i = 9; i >= 0; i--) {
      const r = await ask();
      assert.equal(r.overallCode, Code.OK);
      assert.equal(r.statuses[0]!.limitRemaining, i);
    }
    const refused = await ask();
    assert.equal(refused.overallCode, Code.OVER_LIMIT);
    assert.deepEqual(refused.statuses[0], {
      code: Code.OVER_LIMIT,
      currentLimit: { name: '', requestsPerUnit: 10, unit: Unit.SECOND },
      limitRemaining: 0,
      durationUntilReset: 1,
    });
    assert.equal(header(refused, 'content-type'), 'application/problem+json');
    assert.equal(header(refused, 'cache-control'), 'no-store');
    assert.equal(header(refused, 'retry-after'), '1');
    assert.equal(header(refused, 'ratelimit'), '"edge.remote_address";r=0;t=1');
    const body = JSON.parse(refused.rawBody);
    assert.deepEqual([body.status, body.code, body.limits], [429, 'rate_limited', ['edge.remote_address']]);
    envoy.setTime(at + 999);
    assert.equal((await ask()).overallCode, Code.OVER_LIMIT);
    envoy.setTime(at + 1000);
    assert.equal((await ask()).statuses[0]!.limitRemaining, 9);
    envoy.setTime(at + 20_000);
    const r = await envoy.call({ domain: 'edge', descriptors: [descriptor(['weight', 'w-reset'])] });
    assert.equal(r.statuses[0]!.durationUntilReset, 40);
  });

  it('does not count refused hits: a client that backs off gets through when the window allows', async () => {
    freshMinute();
    const hit = (hitsAddend: number) =>
      envoy.call({ domain: 'edge', descriptors: [descriptor(['weight', 'w1'])], hitsAddend });
    assert.equal((await hit(8)).statuses[0]!.limitRemaining, 2);
    assert.equal((await hit(5)).overallCode, Code.OVER_LIMIT);
    // Upstream would now hold 13 and refuse; sluice still holds 8.
    const after = await hit(2);
    assert.equal(after.overallCode, Code.OK);
    assert.equal(after.statuses[0]!.limitRemaining, 0);
  });

  it('charges several descriptors all or nothing', async () => {
    freshMinute();
    const both = {
      domain: 'edge',
      descriptors: [descriptor(['tokens', 'aon']), descriptor(['weight', 'aon'])],
    };
    assert.deepEqual(codes(await envoy.call(both)), [Code.OK, Code.OK]);
    assert.deepEqual(codes(await envoy.call(both)), [Code.OK, Code.OK]);
    const third = await envoy.call(both);
    assert.deepEqual([third.overallCode, ...codes(third)], [Code.OVER_LIMIT, Code.OVER_LIMIT, Code.OK]);
    // The refused request charged neither: 10 - 2 = 8 are left, 7 after this one.
    const weight = await envoy.call({ domain: 'edge', descriptors: [descriptor(['weight', 'aon'])] });
    assert.equal(weight.statuses[0]!.limitRemaining, 7);
  });

  it('hits_addend: the request-level 0 means 1, a descriptor-level one wins, and 0 there checks only', async () => {
    freshMinute();
    const key = descriptor(['weight', 'ha']);
    assert.equal(
      (await envoy.call({ domain: 'edge', descriptors: [key], hitsAddend: 0 })).statuses[0]!.limitRemaining,
      9,
    );
    assert.equal(
      (await envoy.call({ domain: 'edge', descriptors: [key], hitsAddend: 3 })).statuses[0]!.limitRemaining,
      6,
    );
    const checked = await envoy.call({
      domain: 'edge',
      descriptors: [{ ...key, hitsAddend: 0 }],
      hitsAddend: 5,
    });
    assert.deepEqual([checked.overallCode, checked.statuses[0]!.limitRemaining], [Code.OK, 6]);
    const own = await envoy.call({ domain: 'edge', descriptors: [{ ...key, hitsAddend: 6 }], hitsAddend: 1 });
    assert.deepEqual([own.overallCode, own.statuses[0]!.limitRemaining], [Code.OK, 0]);
    // Full: a check now says what a hit of 1 would get.
    const full = await envoy.call({ domain: 'edge', descriptors: [{ ...key, hitsAddend: 0 }] });
    assert.equal(full.overallCode, Code.OVER_LIMIT);
  });

  it("keeps Envoy's token-quota pattern: a check on the request, a debit after the response, charged past the limit", async () => {
    freshMinute();
    const check = () =>
      envoy.call({ domain: 'edge', descriptors: [{ ...descriptor(['tokens', 'svc']), hitsAddend: 0 }] });
    const debit = (n: number) =>
      envoy.call({ domain: 'edge', descriptors: [{ ...descriptor(['tokens', 'svc']), hitsAddend: n }] });
    assert.equal((await check()).overallCode, Code.OK);
    assert.equal((await debit(1)).statuses[0]!.limitRemaining, 1);
    assert.equal((await check()).overallCode, Code.OK);
    // The response used 5 tokens: more than is left, charged all the same.
    assert.equal((await debit(5)).overallCode, Code.OVER_LIMIT);
    assert.equal((await check()).overallCode, Code.OVER_LIMIT);
    envoy.setTime(START + minute * 60_000 + 60_000);
    assert.equal((await check()).overallCode, Code.OK);
  });

  it('quota_mode: over only when every quota descriptor is over; a passing request is charged to all', async () => {
    freshMinute();
    const q = (v: string) => descriptor(['quota', v]);
    assert.equal((await envoy.call({ domain: 'edge', descriptors: [q('a'), q('b')] })).overallCode, Code.OK);
    const mixed = await envoy.call({ domain: 'edge', descriptors: [q('a'), q('c')] });
    assert.deepEqual([mixed.overallCode, ...codes(mixed)], [Code.OK, Code.OVER_LIMIT, Code.OK]);
    const allOver = await envoy.call({ domain: 'edge', descriptors: [q('b'), q('c')] });
    assert.deepEqual(
      [allOver.overallCode, ...codes(allOver)],
      [Code.OVER_LIMIT, Code.OVER_LIMIT, Code.OVER_LIMIT],
    );
    const alone = await envoy.call({ domain: 'edge', descriptors: [q('a')] });
    assert.equal(alone.overallCode, Code.OVER_LIMIT);
  });

  it('an override applies, even where no rule matches; with unit UNKNOWN it is INVALID_ARGUMENT and the service goes on', async () => {
    freshMinute();
    const over = { ...descriptor(['nothing', 'configured']), limit: { requestsPerUnit: 2, unit: Unit.HOUR } };
    assert.equal((await envoy.call({ domain: 'edge', descriptors: [over] })).statuses[0]!.limitRemaining, 1);
    const second = await envoy.call({ domain: 'edge', descriptors: [over] });
    assert.deepEqual(second.statuses[0]!.currentLimit, { name: '', requestsPerUnit: 2, unit: Unit.HOUR });
    assert.equal((await envoy.call({ domain: 'edge', descriptors: [over] })).overallCode, Code.OVER_LIMIT);
    const bad = await envoy.callError({
      domain: 'edge',
      descriptors: [{ ...descriptor(['weight', 'x']), limit: { requestsPerUnit: 5, unit: Unit.UNKNOWN } }],
    });
    assert.equal(bad.code, 3);
    assert.match(bad.details, /limit override must have a unit/);
    const elsewhere = await envoy.call({ domain: 'not-configured', descriptors: [over] });
    assert.deepEqual(elsewhere.statuses, [{ code: Code.OK, limitRemaining: 0 }]);
    assert.equal(
      (await envoy.call({ domain: 'edge', descriptors: [descriptor(['weight', 'x'])] })).overallCode,
      Code.OK,
    );
  });

  it('no rule, an unknown domain, no entries, unlimited, a block list, shadow_mode and replaces answer as upstream', async () => {
    freshMinute();
    const one = async (domain: string, ...entries: [string, string][]) =>
      (await envoy.call({ domain, descriptors: [descriptor(...entries)] })).statuses[0];
    assert.deepEqual(await one('edge', ['nope', 'x']), { code: Code.OK, limitRemaining: 0 });
    assert.deepEqual(await one('nowhere', ['remote_address', 'x']), { code: Code.OK, limitRemaining: 0 });
    assert.deepEqual(await one('edge'), { code: Code.OK, limitRemaining: 0 });
    assert.deepEqual(await one('rl', ['foo', 'f'], ['bay', 'b']), {
      code: Code.OK,
      limitRemaining: 4294967295,
    });
    const banned = await envoy.call({
      domain: 'rl',
      descriptors: [descriptor(['foo', 'f'], ['bar', 'banned'])],
    });
    assert.equal(banned.overallCode, Code.OVER_LIMIT);
    assert.deepEqual(banned.statuses[0]!.currentLimit, {
      name: 'banned_limit',
      requestsPerUnit: 0,
      unit: Unit.MINUTE,
    });
    for (let i = 0; i < 3; i++)
      assert.equal((await one('rl', ['foo', 'f'], ['baz', 'shady']))!.limitRemaining, 2 - i);
    const shadow = await envoy.call({
      domain: 'rl',
      descriptors: [descriptor(['foo', 'f'], ['baz', 'shady'])],
    });
    assert.deepEqual(
      [shadow.overallCode, shadow.statuses[0]],
      [
        Code.OK,
        {
          code: Code.OK,
          currentLimit: { name: '', requestsPerUnit: 3, unit: Unit.MINUTE },
          limitRemaining: 0,
          durationUntilReset: 60,
        },
      ],
    );
    // category=account replaces the limit named bkthomps, in the requests that carry both.
    const both = {
      domain: 'rl',
      descriptors: [descriptor(['category', 'account']), descriptor(['foo', 'f'], ['bar', 'bkthomps'])],
    };
    for (let i = 0; i < 3; i++) {
      const r = await envoy.call(both);
      assert.deepEqual(r.statuses[1], { code: Code.OK, limitRemaining: 0 });
      assert.equal(r.statuses[0]!.limitRemaining, 3 - i);
    }
    const alone = { domain: 'rl', descriptors: [descriptor(['foo', 'f'], ['bar', 'bkthomps'])] };
    assert.equal((await envoy.call(alone)).statuses[0]!.currentLimit?.name, 'bkthomps');
    assert.equal((await envoy.call(alone)).overallCode, Code.OVER_LIMIT);
  });

  it("sluice's own option: a token bucket of a burst, refilling requests_per_unit per unit", async () => {
    const at = freshMinute();
    const ask = () => envoy.call({ domain: 'edge', descriptors: [descriptor(['bursty', 'b'])] });
    for (let left = 2; left >= 0; left--) {
      const r = await ask();
      assert.deepEqual([r.overallCode, r.statuses[0]!.limitRemaining], [Code.OK, left]);
    }
    const refused = await ask();
    assert.deepEqual(refused.statuses[0], {
      code: Code.OVER_LIMIT,
      currentLimit: { name: '', requestsPerUnit: 60, unit: Unit.MINUTE },
      limitRemaining: 0,
      durationUntilReset: 3,
    });
    assert.equal(header(refused, 'retry-after'), '1');
    envoy.setTime(at + 1000);
    assert.equal((await ask()).overallCode, Code.OK);
    assert.equal((await ask()).overallCode, Code.OVER_LIMIT);
  });

  it('refuses a request without a domain or descriptors with INVALID_ARGUMENT', async () => {
    const empty = await envoy.callError({ domain: '', descriptors: [descriptor(['weight', 'x'])] });
    assert.deepEqual([empty.code, empty.details], [3, 'rate limit domain must not be empty']);
    const none = await envoy.callError({ domain: 'edge', descriptors: [] });
    assert.deepEqual([none.code, none.details], [3, 'rate limit descriptor list must not be empty']);
    const many = await envoy.callError({
      domain: 'edge',
      descriptors: Array.from({ length: 257 }, (_, i) => descriptor(['weight', `many-${i}`])),
    });
    assert.deepEqual([many.code, many.details], [3, 'a request may hold at most 256 descriptors']);
    const deep = await envoy.callError({
      domain: 'edge',
      descriptors: [
        descriptor(...Array.from({ length: 65 }, (_, i): [string, string] => ['k', `deep-${i}`])),
      ],
    });
    assert.equal(deep.code, 3);
  });

  it('answers health: SERVING for the server, ratelimit and the service; NOT_FOUND for others; Watch too', async () => {
    assert.equal(await envoy.health(), 1);
    assert.equal(await envoy.health('ratelimit'), 1);
    assert.equal(await envoy.health('envoy.service.ratelimit.v3.RateLimitService'), 1);
    assert.equal(await envoy.health('other'), -5);
    assert.equal(await envoy.watchOnce(), 1);
    assert.equal(await envoy.watchOnce('other'), 3);
  });

  it('POST /json takes and gives proto3 JSON: 200, 429, 400', async () => {
    const at = freshMinute();
    envoy.setTime(at + 41_000 - 60_000 + 60_000);
    const request = { domain: 'edge', descriptors: [{ entries: [{ key: 'tokens', value: 'json' }] }] };
    const ok = await envoy.sluice.post('/json', request);
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body.statuses, [
      {
        code: 'OK',
        currentLimit: { requestsPerUnit: 2, unit: 'MINUTE' },
        limitRemaining: 1,
        durationUntilReset: '19s',
      },
    ]);
    assert.equal(ok.body.overallCode, 'OK');
    await envoy.sluice.post('/json', request);
    const over = await envoy.sluice.post('/json', { ...request, hits_addend: 1 });
    assert.equal(over.status, 429);
    assert.deepEqual(over.body.statuses, [
      { code: 'OVER_LIMIT', currentLimit: { requestsPerUnit: 2, unit: 'MINUTE' }, durationUntilReset: '19s' },
    ]);
    assert.equal(JSON.parse(Buffer.from(over.body.rawBody, 'base64').toString()).code, 'rate_limited');
    assert.ok(over.body.responseHeadersToAdd.some((h: { key: string }) => h.key === 'retry-after'));
    assert.equal((await envoy.sluice.post('/json', '{"domain":')).status, 400);
    assert.equal(
      (await envoy.sluice.post('/json', { domain: 'edge', descriptors: [{ entries: 'x' }] })).status,
      400,
    );
    assert.equal((await envoy.sluice.post('/json', { domain: '', descriptors: [] })).status, 400);
    assert.equal(
      (await envoy.sluice.post('/json', { domain: 'edge', extra: 1, descriptors: [] })).status,
      400,
    );
  });

  it('metrics: labels from the configuration only; detailed_metric values in a bounded top-K of fingerprints', async () => {
    freshMinute();
    const values: string[] = [];
    for (let i = 0; i < 40; i++) {
      const value = `user-${1000 + i}`;
      values.push(value);
      const times = i < 3 ? 5 : 1;
      for (let t = 0; t < times; t++)
        await envoy.call({ domain: 'edge', descriptors: [descriptor(['detailed', value])] });
    }
    await envoy.call({ domain: 'someone-elses-domain', descriptors: [descriptor(['detailed', 'x'])] });
    const text = (await fetch(`${envoy.sluice.url}/metrics`).then((r) => r.text())) as string;
    assert.match(
      text,
      /sluice_envoy_hits_total\{domain="edge",descriptor="detailed",outcome="within_limit"\} 52/,
    );
    assert.match(
      text,
      /sluice_envoy_hits_total\{domain="edge",descriptor="remote_address",outcome="over_limit"\}/,
    );
    assert.match(text, /sluice_envoy_domain_not_found_total \d+/);
    assert.match(text, /sluice_envoy_calls_total\{result="invalid_argument"\}/);
    const top = text.split('\n').filter((l) => l.startsWith('sluice_envoy_detailed_top_hits{'));
    assert.equal(top.length, 10);
    assert.equal(top.filter((l) => / 5$/.test(l)).length, 3);
    for (const value of [...values, '203.0.113.7', 'alice', 'someone-elses-domain'])
      assert.ok(!text.includes(value), 'a request value in the metrics');
  });
});
