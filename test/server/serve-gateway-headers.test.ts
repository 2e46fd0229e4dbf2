/**
 * Gateway mode and the headers an application routes by: from a peer that is not a trusted proxy,
 * none of the client's routing headers (client address, host, scheme, port, prefix, original
 * URL, method override, any X-Forwarded-*) reaches the upstream; underscore spellings of them
 * reach it from no peer; a trusted proxy's pass as before. A real upstream records what it got.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request, type IncomingMessage } from 'node:http';
import { startUpstream } from './gateway-support.js';
import { startSluice } from './serve-support.js';

/** Every header a client might write to be routed, addressed or believed elsewhere. */
const written: Record<string, string> = {
  'x-original-url': '/admin',
  'x-rewrite-url': '/admin',
  'x-forwarded-host': 'elsewhere.example',
  'x-forwarded-prefix': '/admin',
  'x-forwarded-port': '8443',
  'x-forwarded-proto': 'https',
  'x-forwarded-for': '203.0.113.7',
  'x-forwarded-server': 'elsewhere.example',
  'x-forwarded-uri': '/admin',
  x_forwarded_for: '203.0.113.7',
  x_forwarded_host: 'elsewhere.example',
  x_real_ip: '203.0.113.7',
  'x-client-ip': '203.0.113.7',
  'true-client-ip': '203.0.113.7',
  'cf-connecting-ip': '203.0.113.7',
  'fastly-client-ip': '203.0.113.7',
  'x-cluster-client-ip': '203.0.113.7',
  'x-real-ip': '203.0.113.7',
  forwarded: 'for=203.0.113.7;host=elsewhere.example',
  'x-http-method-override': 'DELETE',
  'x-method-override': 'DELETE',
  'x-original-host': 'elsewhere.example',
  // Not a routing header: passes from every peer.
  'x-other': 'kept',
};

/** Sends one GET with these headers; resolves with its status. */
function call(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: false, timeout: 10_000 });
    req.on('response', (res: IncomingMessage) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
    req.end();
  });
}

/** The gateway on a policy, with an upstream that records; runs `body`, then stops both. */
async function withGateway(
  clients: string,
  body: (url: string, seen: () => IncomingMessage['headers']) => Promise<void>,
): Promise<void> {
  const upstream = await startUpstream((req, res) => {
    req.resume();
    res.end('ok');
  });
  const sluice = await startSluice(
    `version: 1\nupstream: \${UPSTREAM}\n${clients}rules: [{ name: all, algorithm: token-bucket, limit: 100, period: 1m }]\n`,
    [],
    { UPSTREAM: upstream.url },
  );
  sluice.sensitive('203.0.113.7', 'elsewhere.example');
  try {
    await body(sluice.url, () => upstream.seen.at(-1)!.headers);
  } finally {
    assert.equal(await sluice.stop(), 0);
    await upstream.close();
  }
}

describe('sluice serve: gateway, routing headers', () => {
  it('from a peer it does not trust, forwards none of the routing headers the client wrote', async () => {
    await withGateway('clients: { trustedProxies: [192.0.2.1] }\n', async (url, seen) => {
      assert.equal(await call(`${url}/page`, written), 200);
      const headers = seen();
      for (const name of Object.keys(written)) {
        if (['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-other'].includes(name)) continue;
        assert.equal(headers[name], undefined, name);
      }
      // The three the gateway writes itself, from what it saw.
      assert.equal(headers['x-forwarded-for'], '127.0.0.1');
      assert.equal(headers['x-forwarded-proto'], 'http');
      assert.equal(headers['x-forwarded-host'], new URL(url).host);
      assert.equal(headers['x-other'], 'kept');
    });
  });

  it('from a trusted proxy, keeps its forwarding headers as before, but no underscore spelling of one', async () => {
    await withGateway('', async (url, seen) => {
      assert.equal(await call(`${url}/page`, written), 200);
      const headers = seen();
      assert.equal(headers['x-forwarded-for'], '203.0.113.7, 127.0.0.1');
      assert.equal(headers['x-forwarded-proto'], 'https');
      assert.equal(headers['x-forwarded-host'], 'elsewhere.example');
      assert.equal(headers['x-forwarded-port'], '8443');
      assert.equal(headers['x-real-ip'], '203.0.113.7');
      assert.equal(headers.forwarded, 'for=203.0.113.7;host=elsewhere.example');
      for (const name of ['x_forwarded_for', 'x_forwarded_host', 'x_real_ip'])
        assert.equal(headers[name], undefined, name);
    });
  });
});
