/**
 * Who may reach the server's own routes from a browser. Without tokens every route answers only
 * a loopback Host or a configured name (421 otherwise: DNS rebinding from a page the operator
 * opens), while the gateway's application traffic goes on; with or without tokens, a browser
 * request from another site or origin may not reset, forget or post to the dashboard (403).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startUpstream, type Upstream } from './gateway-support.js';
import { startSluice, type RunningSluice } from './serve-support.js';

const ADMIN = 'admin-token-0123456789';
const rules = `rules:
  - { name: api, algorithm: token-bucket, limit: 100, period: 1m }
`;

/** A request with exactly these headers (fetch may not set Host); resolves with status and code. */
function call(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; code: string | undefined }> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      `${url}${path}`,
      {
        method,
        headers: { ...headers, ...(text === undefined ? {} : { 'content-type': 'application/json' }) },
      },
      (res) => {
        let data = '';
        res.on('data', (chunk: Buffer) => (data += chunk));
        res.on('end', () => {
          let code: string | undefined;
          try {
            code = (JSON.parse(data) as { code?: string }).code;
          } catch {
            code = undefined;
          }
          resolve({ status: res.statusCode!, code });
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

const batch = { items: [{ rule: 'api', key: 'k' }] };
const routes: [string, string, unknown?][] = [
  ['POST', '/v1/decisions', batch],
  ['POST', '/v1/peek', batch],
  ['POST', '/v1/reset', batch],
  ['POST', '/v1/forget', { items: [{ key: 'k' }] }],
  ['GET', '/metrics'],
  ['GET', '/healthz'],
  ['GET', '/readyz'],
  ['GET', '/openapi.json'],
  ['GET', '/dashboard'],
  ['POST', '/dashboard/login'],
  ['GET', '/no-such-route'],
];

describe('sluice serve without tokens: the Host', () => {
  let sluice: RunningSluice;
  let upstream: Upstream;
  before(async () => {
    upstream = await startUpstream((_req, res) => res.end('app'));
    sluice = await startSluice(
      // The server's own routes beside the gateway's, on one listener.
      `version: 1\nhosts: [api.local]\nupstream: \${UPSTREAM}\nserver: { admin: main }\n${rules}`,
      ['--allowed-host', 'sluice.internal'],
      { UPSTREAM: upstream.url },
    );
  });
  after(async () => {
    await sluice.stop();
    await upstream.close();
  });

  it('refuses every route with 421 to a Host that is not loopback or a configured name', async () => {
    const port = new URL(sluice.url).port;
    for (const host of [
      'attacker.example',
      `attacker.example:${port}`,
      '127.0.0.1.attacker.example',
      'api.local.evil',
    ]) {
      for (const [method, path, body] of routes) {
        // An unknown path is the gateway's here: application traffic, tested below.
        if (path === '/no-such-route') continue;
        const reply = await call(sluice.url, method, path, { host }, body);
        // The dashboard refuses such a Host itself (without tokens: a loopback client only).
        if (path === '/dashboard') {
          assert.deepEqual(reply, { status: 403, code: 'forbidden' }, `${method} ${path} ${host}`);
          continue;
        }
        if (path.startsWith('/dashboard/')) {
          assert.notEqual(reply.status, 200, `${method} ${path} ${host}`);
          continue;
        }
        assert.deepEqual(reply, { status: 421, code: 'misdirected_request' }, `${method} ${path} ${host}`);
      }
    }
  });

  it('answers a loopback Host, with any port, and the configured names', async () => {
    const port = new URL(sluice.url).port;
    for (const host of [
      `127.0.0.1:${port}`,
      '127.9.9.9',
      `localhost:${port}`,
      'localhost.',
      `[::1]:${port}`,
      'API.local:80',
      'sluice.internal',
    ]) {
      for (const [method, path, body] of routes.filter(([, p]) => p.startsWith('/v1/') || p === '/healthz')) {
        const reply = await call(sluice.url, method, path, { host }, body);
        assert.equal(reply.status, 200, `${method} ${path} ${host}`);
      }
    }
  });

  it("the gateway's application traffic is not refused by its Host", async () => {
    const seen = upstream.seen.length;
    const reply = await call(sluice.url, 'GET', '/no-such-route', { host: 'attacker.example' });
    assert.equal(reply.status, 200);
    assert.equal(upstream.seen.length, seen + 1);
  });
});

describe('sluice serve: cross-site browser requests to state-changing routes', () => {
  let sluice: RunningSluice;
  before(async () => {
    sluice = await startSluice(
      `version: 1\nauth:\n  tokens:\n    - { token: "${ADMIN}", scopes: [decide, admin] }\n${rules}`,
    );
  });
  after(async () => {
    await sluice.stop();
  });

  const auth = { authorization: `Bearer ${ADMIN}` };
  const crossSite: Record<string, string>[] = [
    { origin: 'http://attacker.example' },
    { origin: 'null' },
    { origin: 'http://127.0.0.1:1' },
    { 'sec-fetch-site': 'cross-site' },
    { 'sec-fetch-site': 'same-site' },
  ];

  it("reset, forget and the dashboard's POSTs refuse them with 403, even with a token", async () => {
    for (const headers of crossSite) {
      for (const [method, path, body] of routes.filter(
        ([m, p]) => p === '/v1/reset' || p === '/v1/forget' || (m === 'POST' && p.startsWith('/dashboard')),
      )) {
        const reply = await call(sluice.url, method, path, { ...auth, ...headers }, body);
        assert.deepEqual(
          reply,
          { status: 403, code: 'cross_site_request' },
          `${path} ${JSON.stringify(headers)}`,
        );
      }
    }
  });

  it('a same-origin page, or a client that is not a browser, may reset; decisions are not state-changing routes', async () => {
    const host = new URL(sluice.url).host;
    const sameOrigin: Record<string, string>[] = [
      {},
      { origin: sluice.url },
      { 'sec-fetch-site': 'same-origin', origin: sluice.url },
      // A page with no referrer (the dashboard's own) posts with Origin null: its
      // Sec-Fetch-Site says it is the same origin.
      { 'sec-fetch-site': 'same-origin', origin: 'null' },
      { 'sec-fetch-site': 'none' },
    ];
    for (const headers of sameOrigin) {
      assert.equal(
        (await call(sluice.url, 'POST', '/v1/reset', { ...auth, ...headers, host }, batch)).status,
        200,
      );
    }
    for (const headers of crossSite)
      assert.equal(
        (await call(sluice.url, 'POST', '/v1/decisions', { ...auth, ...headers }, batch)).status,
        200,
      );
  });
});
