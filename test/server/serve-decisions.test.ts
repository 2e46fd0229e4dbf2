/**
 * `sluice serve`, the real CLI as a child process: decisions exact under a known policy, the
 * first-refusal order of rules, lists, peek, reset and forget, and every response checked
 * against the OpenAPI document's schemas.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { apiValidator } from '../../src/server/serve/api-schemas.js';
import { SECRET } from './policy-support.js';
import { fromAddress, startSluice, type Reply, type RunningSluice } from './serve-support.js';

const policy = `version: 1
clients: { pseudonymSecret: "${SECRET}" }
rules:
  - name: login-ip
    match: { methods: [POST], paths: [/api/login] }
    key: [address]
    deny: [198.51.100.0/24]
    allow: [192.0.2.1]
    algorithm: token-bucket
    limit: 4
    period: 1h
  - name: login
    match: { methods: [POST], paths: [/api/login] }
    key: [address, header:x-nick]
    algorithm: token-bucket
    limit: 3
    period: 1h
  - name: quota
    headers: legacy
    algorithm: calendar-quota
    limit: 5
    match: { paths: [/reports/**] }
  - name: shadowed
    mode: shadow
    match: { paths: [/try] }
    algorithm: fixed-window
    limit: 1
    window: 1h
  - name: exports
    match: { paths: [/exports] }
    limits:
      - { algorithm: token-bucket, limit: 1000, period: 1h }
      - { algorithm: fixed-window, limit: 2, window: 1m, name: exports-minute }
`;

const validators = {
  decisions: apiValidator('Decisions'),
  verdicts: apiValidator('Verdicts'),
  cleared: apiValidator('Cleared'),
  problem: apiValidator('Problem'),
  health: apiValidator('Health'),
};

/** The reply's body conforms to the named schema of the OpenAPI document. */
function conforms(reply: Reply, schema: keyof typeof validators): Reply {
  const validate = validators[schema];
  assert.ok(validate(reply.body), `${schema}: ${JSON.stringify(validate.errors)}`);
  return reply;
}

describe('sluice serve: decisions', () => {
  let sluice: RunningSluice;
  before(async () => {
    sluice = await startSluice(policy);
  });
  after(async () => {
    await sluice.stop();
  });

  const decide = async (...items: unknown[]) => {
    const reply = conforms(await sluice.post('/v1/decisions', { items }), 'decisions');
    assert.equal(reply.status, 200);
    return reply.body.results;
  };

  it('a named rule and a caller-built key: exact counts, then the 429 the library writes', async () => {
    const results = await decide(...Array.from({ length: 4 }, () => ({ rule: 'login', key: 'ann' })));
    assert.deepEqual(
      results.map((r: { allowed: boolean; remaining: number; status: number }) => [
        r.allowed,
        r.remaining,
        r.status,
      ]),
      [
        [true, 2, 200],
        [true, 1, 200],
        [true, 0, 200],
        [false, 0, 429],
      ],
    );
    const refused = results[3];
    assert.deepEqual(refused.refusedBy, ['login']);
    assert.deepEqual(refused.rules, ['login']);
    assert.equal(refused.retryAfterMs > 1_190_000 && refused.retryAfterMs <= 1_200_000, true);
    assert.equal(refused.headers['Retry-After'], '1200');
    assert.equal(refused.headers['Content-Type'], 'application/problem+json');
    assert.equal(refused.headers['RateLimit-Policy'], '"login";q=3;w=3600');
    assert.deepEqual(
      { code: refused.body.code, status: refused.body.status, limits: refused.body.limits },
      { code: 'rate_limited', status: 429, limits: ['login'] },
    );
    assert.equal(results[0].headers['RateLimit-Policy'], '"login";q=3;w=3600');
    assert.equal(results[0].body, undefined);
  });

  it('a rule of two limits refused by one: the other is told as it holds, charged nothing', async () => {
    const results = await decide(...Array.from({ length: 3 }, () => ({ rule: 'exports', key: 'team' })));
    const refused = results[2];
    assert.deepEqual(refused.refusedBy, ['exports-minute']);
    assert.deepEqual(
      refused.decisions.map((d: { name: string; allowed: boolean; cost: number; remaining: number }) => [
        d.name,
        d.allowed,
        d.cost,
        d.remaining,
      ]),
      [
        ['exports', true, 0, 998],
        ['exports-minute', false, 1, 0],
      ],
    );
    assert.match(refused.headers.RateLimit, /^"exports";r=998;t=\d+, "exports-minute";r=0;t=\d+$/);
    assert.deepEqual(refused.body.limits, ['exports-minute']);
    const [peeked] = conforms(
      await sluice.post('/v1/peek', { items: [{ rule: 'exports', key: 'team' }] }),
      'verdicts',
    ).body.results;
    assert.equal(peeked.decisions[0].remaining, 998);
  });

  it('a request goes through the rules it matches in file order; the first refusal stops', async () => {
    const bob = fromAddress('203.0.113.7', 'POST', '/api/login', { 'X-Nick': 'bob' });
    const results = await decide(bob, bob, bob, bob);
    assert.deepEqual(
      results.map((r: { decisions: { name: string; remaining: number }[] }) =>
        r.decisions.map((d) => `${d.name}=${d.remaining}`),
      ),
      [
        ['login-ip=3', 'login=2'],
        ['login-ip=2', 'login=1'],
        ['login-ip=1', 'login=0'],
        ['login-ip=0', 'login=0'],
      ],
    );
    assert.deepEqual(results[3].refusedBy, ['login']);
    // Admitted by both, the headers of both: the IETF fields are lists.
    assert.equal(results[0].headers['RateLimit-Policy'], '"login-ip";q=4;w=3600, "login";q=3;w=3600');
    // The address is spent now: a fifth attempt, another nick, is refused by the wide rule and
    // never reaches (nor charges) the narrow one.
    const [fifth] = await decide(fromAddress('203.0.113.7', 'POST', '/api/login', { 'x-nick': 'carol' }));
    assert.deepEqual(fifth.rules, ['login-ip']);
    assert.deepEqual(fifth.refusedBy, ['login-ip']);
    const [carol] = conforms(
      await sluice.post('/v1/peek', {
        items: [fromAddress('203.0.113.8', 'POST', '/api/login', { 'x-nick': 'carol' })],
      }),
      'verdicts',
    ).body.results;
    assert.equal(carol.decisions[1].remaining, 3);
  });

  it('deny answers 403 before any limit; allow passes without a decision; no match passes untouched', async () => {
    const [denied, allowed, unmatched] = await decide(
      fromAddress('198.51.100.9'),
      fromAddress('192.0.2.1'),
      fromAddress('203.0.113.50', 'GET', '/elsewhere'),
    );
    assert.deepEqual(
      [denied.allowed, denied.status, denied.body.code, denied.decisions],
      [false, 403, 'denied', []],
    );
    // The allow-listed address skips login-ip only; login (no list) still decides.
    assert.deepEqual(
      allowed.decisions.map((d: { name: string }) => d.name),
      ['login'],
    );
    assert.deepEqual(
      [unmatched.allowed, unmatched.status, unmatched.rules, unmatched.headers],
      [true, 200, [], {}],
    );
  });

  it('the client address behind a trusted proxy (loopback) is read from X-Forwarded-For', async () => {
    const viaProxy = fromAddress('127.0.0.1', 'POST', '/api/login', { 'x-forwarded-for': '198.51.100.20' });
    const [result] = await decide(viaProxy);
    assert.equal(result.status, 403);
  });

  it('legacy headers, a cost, a quota; a cost beyond the quota has no retry time', async () => {
    const [first, tooMuch] = await decide(
      { request: { method: 'GET', path: '/reports/2026', address: '203.0.113.60' }, cost: 2 },
      { rule: 'quota', key: 'someone', cost: 6 },
    );
    assert.equal(first.remaining, 3);
    assert.equal(first.headers['X-RateLimit-Limit'], '5');
    assert.equal(first.headers['X-RateLimit-Remaining'], '3');
    assert.equal(tooMuch.allowed, false);
    assert.equal(tooMuch.retryAfterMs, null);
    assert.equal(tooMuch.headers['Retry-After'], undefined);
  });

  it('a shadow rule never refuses and sends no headers, but says what it would have done', async () => {
    const results = await decide(
      fromAddress('203.0.113.70', 'GET', '/try'),
      fromAddress('203.0.113.70', 'GET', '/try'),
    );
    assert.deepEqual(
      results.map((r: { allowed: boolean; status: number }) => [r.allowed, r.status]),
      [
        [true, 200],
        [true, 200],
      ],
    );
    assert.equal(results[1].decisions[0].source, 'shadow');
    assert.deepEqual(results[1].headers, {});
  });

  it('peek charges nothing; reset gives the key a full bucket', async () => {
    await decide({ rule: 'login', key: 'dora' }, { rule: 'login', key: 'dora' });
    const peek = async () =>
      conforms(await sluice.post('/v1/peek', { items: [{ rule: 'login', key: 'dora' }] }), 'verdicts').body
        .results[0];
    assert.equal((await peek()).remaining, 1);
    assert.equal((await peek()).remaining, 1);
    const reset = conforms(
      await sluice.post('/v1/reset', { items: [{ rule: 'login', key: 'dora' }] }),
      'cleared',
    );
    assert.deepEqual(reset.body.results, [{ rules: ['login'], buckets: 1 }]);
    assert.equal((await peek()).remaining, 3);
  });

  it('peek reads the address lists as a decision does: denied is refused, allowed is not limited', async () => {
    const { body } = conforms(
      await sluice.post('/v1/peek', {
        items: [fromAddress('198.51.100.9'), fromAddress('192.0.2.1'), fromAddress('203.0.113.90')],
      }),
      'verdicts',
    );
    const [denied, allowed, other] = body.results;
    assert.deepEqual(
      [denied.allowed, denied.rules, denied.decisions],
      [false, ['login-ip'], []],
      'a denied client is refused by the rule that denies it, before any limit',
    );
    assert.deepEqual(
      [allowed.allowed, allowed.rules, allowed.decisions.map((d: { name: string }) => d.name)],
      [true, ['login-ip', 'login'], ['login']],
      'an allowed client is not limited by the listing rule, and still by the others',
    );
    assert.deepEqual(
      other.decisions.map((d: { name: string }) => d.name),
      ['login-ip', 'login'],
    );
  });
  it('forget clears a key in every rule; a request in the rules it matches', async () => {
    const eve = fromAddress('203.0.113.80', 'POST', '/api/login', { 'x-nick': 'eve' });
    await decide(eve, eve);
    const forgot = conforms(
      await sluice.post('/v1/forget', { items: [eve, { key: 'nobody', rules: ['quota'] }] }),
      'cleared',
    );
    assert.deepEqual(forgot.body.results, [
      { rules: ['login-ip', 'login'], buckets: 2 },
      { rules: ['quota'], buckets: 1 },
    ]);
    const [after] = await decide(eve);
    assert.deepEqual(
      after.decisions.map((d: { remaining: number }) => d.remaining),
      [3, 2],
    );
  });

  it('health, readiness and the OpenAPI document', async () => {
    assert.deepEqual(conforms(await sluice.get('/healthz'), 'health').body, { status: 'ok' });
    assert.deepEqual(conforms(await sluice.get('/readyz'), 'health').body, { status: 'ok', store: 'memory' });
    const doc = await sluice.get('/openapi.json');
    assert.equal(doc.body.openapi, '3.1.0');
    assert.deepEqual(Object.keys(doc.body.paths).sort(), [
      '/healthz',
      '/openapi.json',
      '/readyz',
      '/v1/decisions',
      '/v1/forget',
      '/v1/peek',
      '/v1/reset',
    ]);
  });

  it('errors are problem+json: unknown rule, bad shape, not JSON, wrong type, unknown path, wrong method', async () => {
    const cases: [Reply, number, string][] = [
      [await sluice.post('/v1/decisions', { items: [{ rule: 'nope', key: 'k' }] }), 400, 'invalid_request'],
      [await sluice.post('/v1/decisions', { items: [] }), 400, 'invalid_request'],
      [await sluice.post('/v1/decisions', '{"items": ['), 400, 'invalid_request'],
      [
        await sluice.post('/v1/decisions', '{}', { 'content-type': 'text/plain' }),
        415,
        'unsupported_media_type',
      ],
      [await sluice.get('/v2/decisions'), 404, 'not_found'],
      [await sluice.get('/v1/decisions'), 405, 'method_not_allowed'],
    ];
    for (const [reply, status, code] of cases) {
      conforms(reply, 'problem');
      assert.equal(reply.status, status);
      assert.equal(reply.body.code, code);
      assert.equal(reply.headers.get('content-type'), 'application/problem+json');
    }
    assert.deepEqual(cases[0]![0].body.errors, [
      { path: '/items/0/rule', message: 'names no rule of the policy' },
    ]);
    assert.equal(cases[5]![0].headers.get('allow'), 'POST');
  });

  it('an endpoint answers in every spelling of its path, as the gateway tells its own paths', async () => {
    // '//v1/…' once read as a URL with host "v1" (a 404), and '/V1/…' was not the endpoint either,
    // while a gateway keeps both from its upstream as its own paths.
    for (const path of ['//v1/decisions', '/V1/Decisions', '/v1/./decisions/', '/v1/decisions?x=1']) {
      const reply = await sluice.post(path, { items: [{ rule: 'quota', key: 'spelling' }] });
      assert.equal(reply.status, 200, path);
      conforms(reply, 'decisions');
    }
  });

  it('a body over 1 MiB is a 413, before it is parsed', async () => {
    const big = JSON.stringify({ items: [{ rule: 'login', key: 'x'.repeat(1024 * 1024) }] });
    const reply = await sluice.post('/v1/decisions', big);
    assert.equal(reply.status, 413);
    assert.equal(conforms(reply, 'problem').body.code, 'payload_too_large');
  });

  it('a body over 1 MiB is read to its end before the 413, so that a client still sending it gets the answer on a connection it may use again', async () => {
    // Answering while the client still writes, then closing, made the client's system reset the
    // connection: the client saw a failed request, not the 413.
    const { hostname, port } = new URL(sluice.url);
    const socket = connect(Number(port), hostname);
    await once(socket, 'connect');
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (received += chunk));
    const body = JSON.stringify({ items: [{ rule: 'login', key: 'x'.repeat(1024 * 1024 + 10) }] });
    const request = (path: string, text: string) =>
      `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n`;
    // Half the body, then the rest once the server has had the headers for a while.
    socket.write(request('/v1/decisions', body) + body.slice(0, 4096));
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(received, '', 'no answer before the body has arrived');
    socket.write(body.slice(4096));
    const small = JSON.stringify({ items: [{ rule: 'quota', key: 'after-a-large-body' }] });
    socket.write(request('/v1/decisions', small) + small);
    for (let i = 0; i < 200 && (received.match(/HTTP\/1\.1 /g) ?? []).length < 2; i++)
      await new Promise((resolve) => setTimeout(resolve, 25));
    socket.destroy();
    const statuses = [...received.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
    assert.deepEqual(statuses, [413, 200], 'the 413, then the next request on the same connection');
    assert.doesNotMatch(received.split('HTTP/1.1 200')[0]!, /connection: close/i);
  });

  it('no key or address reaches a problem body or the output', async () => {
    const reply = await sluice.post('/v1/decisions', {
      items: [{ rule: 'login', key: 'secret-user-key' }, fromAddress('not an address')],
    });
    // An address that is not one cannot key a client: the library's 400 for that item.
    assert.deepEqual(
      [reply.body.results[1].status, reply.body.results[1].body.code],
      [400, 'invalid_request'],
    );
    assert.ok(!sluice.output().includes('secret-user-key'));
    assert.ok(!sluice.output().includes('not an address'));
  });
});
