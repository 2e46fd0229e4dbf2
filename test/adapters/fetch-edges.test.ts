/** sluice/fetch beyond the conformance suite: the peer's shapes, responses it cannot change, odd requests. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, createLimiter, tokenBucket } from '../../src/index.js';
import { clientAddressOf, rateLimit, rateLimitOf, type PeerInfo } from '../../src/adapters/fetch/index.js';

const limiter = (limit = 5) =>
  createLimiter({ name: 'api', rule: tokenBucket({ limit, period: '1m' }), store: new MemoryStore() });
const get = (headers: Record<string, string> = {}) => new Request('http://localhost/api', { headers });

describe('fetch: the peer address', () => {
  it('is read from { address }, Deno info and Bun server; a server that throws or gives nothing names none', async () => {
    const seen: (string | undefined)[] = [];
    const limit = rateLimit({
      limits: limiter(10),
      key: (request) => {
        seen.push(clientAddressOf(request));
        return 'k';
      },
    });
    const infos: (PeerInfo | undefined)[] = [
      { address: '203.0.113.1' },
      { remoteAddr: { hostname: '203.0.113.2' } },
      { requestIP: () => ({ address: '203.0.113.3' }) },
      {
        requestIP: () => {
          throw new Error('no socket');
        },
      },
      { requestIP: () => null },
      undefined,
    ];
    for (const info of infos) assert.equal(await limit(get(), info), undefined);
    assert.deepEqual(seen, ['203.0.113.1', '203.0.113.2', '203.0.113.3', undefined, undefined, undefined]);
  });

  it('is asked of the server only when the key or a list reads it, once per request', async () => {
    let asked = 0;
    const bun = {
      requestIP: () => {
        asked++;
        return { address: '203.0.113.4' };
      },
    };
    const byUser = rateLimit({ limits: limiter(), key: () => 'user:1' });
    assert.equal(await byUser(get(), bun), undefined);
    assert.equal(asked, 0, 'a limit keyed by a user never asks');
    const byAddress = rateLimit({ limits: limiter(), key: (request) => `ip:${clientAddressOf(request)}` });
    const request = get();
    assert.equal(await byAddress(request, bun), undefined);
    assert.equal(await byUser(request, bun), undefined);
    assert.equal(clientAddressOf(request), '203.0.113.4');
    assert.equal(asked, 1);
  });

  it('found by a first limit stays when a second limit is handed a server that names none', async () => {
    const first = rateLimit({ limits: limiter(), key: () => 'k' });
    const second = rateLimit({ limits: limiter(), key: (request) => `ip:${clientAddressOf(request)}` });
    const request = get();
    assert.equal(await first(request, { address: '203.0.113.5' }), undefined);
    assert.equal(await second(request, { requestIP: () => null }), undefined);
    assert.equal(clientAddressOf(request), '203.0.113.5');
  });

  it('behind a trusted proxy is the forwarded client, for the key and for the lists', async () => {
    const proxies = { trustedProxies: ['10.0.0.0/8'] };
    const limit = rateLimit({
      limits: limiter(),
      key: (request) => `ip:${clientAddressOf(request, proxies)}`,
      deny: ['198.51.100.0/24'],
      proxies,
    });
    const denied = await limit(get({ 'x-forwarded-for': '198.51.100.9' }), { address: '10.1.2.3' });
    assert.equal(denied?.status, 403);
    const request = get({ 'x-forwarded-for': '198.51.100.9' });
    assert.equal(
      await limit(request, { address: '192.0.2.1' }),
      undefined,
      'an untrusted peer is the client',
    );
    assert.equal(rateLimitOf(request)?.decisions[0]?.remaining, 4);
  });
});

describe('fetch: finish', () => {
  it('adds the headers to a copy of a response whose headers cannot change, keeping status and body', async () => {
    const limit = rateLimit({ limits: limiter(), key: () => 'k' });
    const request = get();
    assert.equal(await limit(request), undefined);
    const redirect = Response.redirect('http://localhost/elsewhere', 302);
    assert.throws(() => redirect.headers.set('x', 'y'), TypeError, 'Response.redirect has immutable headers');
    const finished = limit.finish(request, redirect);
    assert.equal(finished.status, 302);
    assert.equal(finished.headers.get('location'), 'http://localhost/elsewhere');
    assert.equal(finished.headers.get('ratelimit'), '"api";r=4;t=12');
  });

  it('works on a request that takes no new property, and adds nothing to a request it did not admit', async () => {
    const limit = rateLimit({ limits: limiter(1), key: () => 'k' });
    const sealed = Object.preventExtensions(get());
    assert.equal(await limit(sealed), undefined);
    assert.equal(limit.finish(sealed, new Response('ok')).headers.get('ratelimit'), '"api";r=0;t=60');
    assert.equal(rateLimitOf(sealed)?.decisions.length, 1);
    const refusedRequest = get();
    assert.equal((await limit(refusedRequest))?.status, 429);
    const passed = new Response('ok');
    assert.equal(limit.finish(refusedRequest, passed), passed);
    assert.equal(passed.headers.get('ratelimit'), null);
  });

  it('a request that passed two limits gets both limits\u2019 headers, each once', async () => {
    const a = rateLimit({ limits: limiter(), key: () => 'a', headers: 'draft' });
    const b = rateLimit({ limits: limiter(), key: () => 'b', headers: 'legacy' });
    const handler = a.wrap(b.wrap(() => new Response('ok')));
    const response = await handler(get());
    assert.equal(response.headers.get('ratelimit'), '"api";r=4;t=12');
    assert.equal(response.headers.get('x-ratelimit-remaining'), '4');
  });
});
