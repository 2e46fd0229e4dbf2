/**
 * The named ranges Express's `trust proxy` accepts, and the server's policy file writes, work
 * in the library's lists of trusted proxies (and allow and deny lists) too.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { createClientAddress, isSluiceError } from '../../src/index.js';
import { AddressList } from '../../src/http/address-list.js';
import { withSocketAddress } from '../../src/adapters/shared/socket-address.js';

const forwarded = { 'x-forwarded-for': '198.51.100.7' };
const sourceOf = (trustedProxies: readonly string[], peer: string) =>
  createClientAddress({ trustedProxies })({ peer, headers: forwarded }).source;

describe('named ranges in trustedProxies', () => {
  it('loopback trusts this machine in both families, and nothing else', () => {
    for (const peer of ['127.0.0.1', '127.9.9.9', '::1', '::ffff:127.0.0.1'])
      assert.equal(sourceOf(['loopback'], peer), 'x-forwarded-for', peer);
    for (const peer of ['10.0.0.1', '203.0.113.7', '::2'])
      assert.equal(sourceOf(['loopback'], peer), 'untrusted-peer', peer);
  });

  it('uniquelocal trusts the private networks of both families', () => {
    for (const peer of ['10.1.2.3', '172.16.0.1', '172.31.255.254', '192.168.1.1', 'fd00::1', 'fc12::9'])
      assert.equal(sourceOf(['uniquelocal'], peer), 'x-forwarded-for', peer);
    for (const peer of ['172.32.0.1', '11.0.0.1', '127.0.0.1', 'fe80::1', '2001:db8::1'])
      assert.equal(sourceOf(['uniquelocal'], peer), 'untrusted-peer', peer);
  });

  it('linklocal trusts 169.254.0.0/16 and fe80::/10', () => {
    for (const peer of ['169.254.1.1', 'fe80::1', 'febf::1'])
      assert.equal(sourceOf(['linklocal'], peer), 'x-forwarded-for', peer);
    for (const peer of ['169.255.0.1', 'fec0::1', '10.0.0.1'])
      assert.equal(sourceOf(['linklocal'], peer), 'untrusted-peer', peer);
  });

  it('names mix with ranges, in the adapters proxies option and in allow and deny lists', () => {
    assert.equal(sourceOf(['loopback', '203.0.113.0/24'], '203.0.113.9'), 'x-forwarded-for');
    assert.equal(sourceOf(['loopback', '203.0.113.0/24'], '127.0.0.1'), 'x-forwarded-for');
    const options = withSocketAddress<IncomingMessage>(
      { limits: [], key: () => 'k', allow: ['uniquelocal'], proxies: { trustedProxies: ['loopback'] } },
      (request) => request,
    );
    const request = new IncomingMessage(new Socket());
    request.headers = { 'x-forwarded-for': '10.0.0.5' };
    Object.defineProperty(request.socket, 'remoteAddress', { value: '127.0.0.1' });
    assert.equal(options.address?.(request), '10.0.0.5');
    assert.equal(new AddressList(['uniquelocal'], 'deny').has('192.168.0.9'), true);
    assert.equal(new AddressList(['uniquelocal'], 'deny').has('203.0.113.9'), false);
  });

  it('a name in another spelling is a bad entry, named by its position and never quoted', () => {
    for (const entry of ['Loopback', 'local', 'loopback/8']) {
      assert.throws(
        () => createClientAddress({ trustedProxies: ['10.0.0.0/8', entry] }),
        (error: unknown) =>
          isSluiceError(error, 'SLUICE_CONFIG') &&
          error.message.startsWith('clientAddress trustedProxies[1] must be') &&
          !error.message.includes(entry),
      );
    }
  });
});
