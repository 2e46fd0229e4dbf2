/**
 * The gateway's one spelling of a request target and of a host: the target is what http-proxy-3
 * itself forwards (so what the rules read is what the upstream gets), parsing it again changes
 * nothing, and a host's port, trailing dot, case and Unicode form never tell two hosts apart.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import fc from 'fast-check';
// The proxy's own construction of the upstream request, to compare with.
import { setupOutgoing } from 'http-proxy-3/dist/lib/http-proxy/common.js';
import { normalizeHost } from '../../src/server/policy/host.js';
import { forwardedTarget } from '../../src/server/serve/forwarded-target.js';
import { compiled, issuesOf } from './policy-support.js';

/** The path and query http-proxy-3 sends the upstream for this request target. */
function proxied(target: string): string {
  const req = { url: target, headers: {}, method: 'GET', httpVersionMajor: 1 } as unknown as IncomingMessage;
  const outgoing = {} as Parameters<typeof setupOutgoing>[0];
  return setupOutgoing(outgoing, { target: new URL('http://127.0.0.1:1') }, req).path as string;
}

const targetChars = fc.constantFrom(
  ...[
    'a',
    'B',
    '_',
    '~',
    "'",
    '@',
    '/',
    '//',
    '\\',
    '.',
    '..',
    '%2e',
    '%2E',
    '%41',
    '%',
    '?',
    '#',
    ' ',
    'é',
    ';',
    '{',
  ],
);
const target = fc.array(targetChars, { maxLength: 14 }).map((chars) => `/${chars.join('')}`);

describe('the forwarded target', () => {
  it('is what http-proxy-3 forwards, and forwarding it again changes nothing', () => {
    fc.assert(
      fc.property(target, (written) => {
        const forwarded = forwardedTarget(written);
        if (forwarded === undefined) return;
        assert.equal(proxied(forwarded), forwarded, written);
        assert.equal(proxied(written), forwarded, written);
        assert.equal(forwardedTarget(forwarded), forwarded, written);
      }),
      { numRuns: 3000 },
    );
  });

  it('resolves backslashes and dot segments as the proxy does, keeping case and the query', () => {
    assert.equal(forwardedTarget('/api\\login'), '/api/login');
    assert.equal(forwardedTarget('/x/..\\api\\login'), '/api/login');
    assert.equal(forwardedTarget('/API\\LOGIN'), '/API/LOGIN');
    assert.equal(forwardedTarget('/api/login\\'), '/api/login/');
    assert.equal(forwardedTarget('/a/%2e%2E/api/login?next=\\..'), '/api/login?next=\\..');
    assert.equal(forwardedTarget('//evil.example/x'), '//evil.example/x');
    assert.equal(forwardedTarget('http://elsewhere.example/x/../y?z'), '/y?z');
    assert.equal(forwardedTarget(undefined), '/');
  });

  it('has no single reading with an encoded slash or backslash in its path', () => {
    for (const written of ['/api%2Flogin', '/api%2flogin', '/api%5Clogin', '/x/..%2f..%2fadmin'])
      assert.equal(forwardedTarget(written), undefined, written);
    assert.equal(forwardedTarget('/search?q=%2F'), '/search?q=%2F');
  });
});

describe('the host in one spelling', () => {
  it('drops a port and one trailing dot, lowers case, writes IDNA names in ASCII', () => {
    for (const host of [
      'api.example.com',
      'api.example.com.',
      'api.example.com:',
      'api.example.com.:443',
      'API.Example.COM:8080',
      'ａｐｉ.example.com',
    ])
      assert.equal(normalizeHost(host), 'api.example.com', host);
    assert.equal(normalizeHost('Bücher.example'), 'xn--bcher-kva.example');
    assert.equal(normalizeHost('xn--bcher-kva.example.'), 'xn--bcher-kva.example');
    assert.equal(normalizeHost('[::1]:8411'), '[::1]');
    assert.equal(normalizeHost('0x7f.1'), '127.0.0.1');
  });

  it('is undefined for what names no host', () => {
    for (const host of ['api.example.com..', 'api example.com', '[::1', '[::1]x', 'a:b:c', ''])
      assert.equal(normalizeHost(host), undefined, host);
  });

  it('is the spelling host rules and host keys compare', async () => {
    const policy = compiled(`version: 1
rules:
  - { name: site, match: { host: API.Example.com. }, key: [host], algorithm: fixed-window, limit: 5, window: 1m }
`);
    try {
      for (const host of ['api.example.com', 'api.example.com.:443', 'API.EXAMPLE.COM:']) {
        const request = policy.read({ method: 'GET', path: '/', host, address: '203.0.113.9' });
        assert.equal(request.host, 'api.example.com', host);
        assert.deepEqual(
          policy.matching(request).map((rule) => rule.name),
          ['site'],
          host,
        );
      }
      const nameless = policy.read({ method: 'GET', path: '/', host: 'a b', address: '203.0.113.9' });
      assert.equal(nameless.host, undefined);
    } finally {
      await policy.close();
    }
  });

  it('in a rule, one that names no host is an error at its line, without the value', () => {
    assert.deepEqual(
      issuesOf(`version: 1
rules:
  - { name: site, match: { host: "secret host.." }, algorithm: fixed-window, limit: 5, window: 1m }
`),
      [
        '3:26: rules[0].match is not accepted: rules[0].match.host must be a host name such as api.example.com (a port is ignored); received a string',
      ],
    );
  });
});
