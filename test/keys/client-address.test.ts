import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  LOOPBACK,
  clientAddress,
  createClientAddress,
  isSluiceError,
  type ClientAddressOptions,
} from '../../src/index.js';

const at = (
  peer: string | undefined,
  headers: Record<string, string | string[]>,
  options?: ClientAddressOptions,
) => clientAddress({ peer, headers }, options);

const behindTwo: ClientAddressOptions = { trustedProxies: [...LOOPBACK, '10.0.0.0/8', 'fd00::/8'] };

describe('clientAddress', () => {
  it('without a proxy header the address is the connection address', () => {
    assert.deepEqual(at('127.0.0.1', {}), { address: '127.0.0.1', source: 'socket' });
    assert.deepEqual(at('203.0.113.7', {}), { address: '203.0.113.7', source: 'untrusted-peer' });
  });

  it('from an untrusted peer the header is not read at all', () => {
    for (const header of ['x-forwarded-for', 'x-real-ip', 'forwarded'] as const) {
      const options = { header };
      const result = at(
        '203.0.113.7',
        { [header]: header === 'forwarded' ? 'for=1.2.3.4' : '1.2.3.4' },
        options,
      );
      assert.deepEqual(result, { address: '203.0.113.7', source: 'untrusted-peer' });
    }
  });

  it('the default trusted set is loopback in both families and IPv4-mapped form', () => {
    for (const peer of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1', '0:0:0:0:0:0:0:1'])
      assert.deepEqual(at(peer, { 'x-forwarded-for': '198.51.100.7' }), {
        address: '198.51.100.7',
        source: 'x-forwarded-for',
      });
    for (const peer of ['128.0.0.1', '::2', '::ffff:10.0.0.1', '10.0.0.1', 'not-an-ip', ''])
      assert.equal(at(peer, { 'x-forwarded-for': '198.51.100.7' }).source, 'untrusted-peer');
  });

  it('X-Real-IP from ::1 is trusted like 127.0.0.1, as the chat service needs behind a local proxy', () => {
    const options = { header: 'x-real-ip' } as const;
    assert.deepEqual(at('::1', { 'x-real-ip': '198.51.100.7' }, options), {
      address: '198.51.100.7',
      source: 'x-real-ip',
    });
    assert.deepEqual(at('127.0.0.1', { 'x-real-ip': '2001:db8::1' }, options), {
      address: '2001:db8::1',
      source: 'x-real-ip',
    });
    assert.deepEqual(at('::1', { 'x-real-ip': ['1.2.3.4', '5.6.7.8'] }, options), {
      address: '::1',
      source: 'malformed-header',
    });
  });

  it('X-Forwarded-For is walked from the right; the client-written left part is never trusted', () => {
    // nginx appended the real client; the client wrote the two entries on the left.
    const spoofed = { 'x-forwarded-for': '6.6.6.1, 127.0.0.1, 198.51.100.7' };
    assert.equal(at('127.0.0.1', spoofed).address, '198.51.100.7');
    const chain = { 'x-forwarded-for': '6.6.6.1, 198.51.100.7, 10.0.0.2, 10.0.0.3' };
    assert.deepEqual(at('10.0.0.4', chain, behindTwo), {
      address: '198.51.100.7',
      source: 'x-forwarded-for',
    });
  });

  it('a fixed hop count takes the entry that many places from the right', () => {
    const headers = { 'x-forwarded-for': '6.6.6.1, 198.51.100.7, 35.191.0.9' };
    assert.equal(at('127.0.0.1', headers, { hops: 1 }).address, '35.191.0.9');
    assert.equal(at('127.0.0.1', headers, { hops: 2 }).address, '198.51.100.7');
    assert.deepEqual(at('127.0.0.1', headers, { hops: 4 }), {
      address: '6.6.6.1',
      source: 'malformed-header',
    });
    assert.equal(at('198.51.100.1', headers, { hops: 1 }).source, 'untrusted-peer');
  });

  it('when every entry is a trusted proxy, the leftmost is the client', () => {
    assert.deepEqual(at('10.0.0.4', { 'x-forwarded-for': '10.0.0.1, 10.0.0.2' }, behindTwo), {
      address: '10.0.0.1',
      source: 'x-forwarded-for',
    });
  });

  it('malformed or empty entries are ignored, never trusted, and never throw', () => {
    const cases: [string, string][] = [
      ['', '127.0.0.1'],
      [' , ', '127.0.0.1'],
      ['unknown', '127.0.0.1'],
      ['1.2.3.4, garbage', '127.0.0.1'],
      ['1.2.3.04', '127.0.0.1'],
      ['1.2.3.4.5', '127.0.0.1'],
      ['256.1.1.1', '127.0.0.1'],
    ];
    for (const [value, address] of cases)
      assert.deepEqual(
        at('127.0.0.1', { 'x-forwarded-for': value }),
        { address, source: 'malformed-header' },
        value,
      );
    // A malformed entry left of a trusted proxy: the proxy's own entry is the nearest vouched one.
    assert.deepEqual(at('10.0.0.4', { 'x-forwarded-for': 'garbage, 10.0.0.2' }, behindTwo), {
      address: '10.0.0.2',
      source: 'malformed-header',
    });
  });

  it('ports, brackets, spaces and repeated headers are read as proxies write them', () => {
    assert.equal(at('::1', { 'x-forwarded-for': '198.51.100.7:4711' }).address, '198.51.100.7');
    assert.equal(at('::1', { 'x-forwarded-for': '[2001:db8::7]:4711' }).address, '2001:db8::7');
    assert.equal(at('::1', { 'x-forwarded-for': '\t2001:db8::7 ' }).address, '2001:db8::7');
    assert.equal(at('::1', { 'x-forwarded-for': '::ffff:198.51.100.7' }).address, '::ffff:198.51.100.7');
    assert.equal(at('::1', { 'x-forwarded-for': ['6.6.6.6', '198.51.100.7'] }).address, '198.51.100.7');
    assert.equal(at('::1', { 'x-forwarded-for': '[1.2.3.4]' }).source, 'malformed-header');
    assert.equal(at('::1', { 'x-forwarded-for': '1.2.3.4:99999' }).source, 'malformed-header');
  });

  it('RFC 7239 Forwarded is walked like X-Forwarded-For', () => {
    const options = { header: 'forwarded', trustedProxies: behindTwo.trustedProxies } as const;
    const value = 'for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https, For=10.0.0.2;by=10.0.0.3';
    assert.deepEqual(at('::1', { forwarded: value }, options), {
      address: '2001:db8:cafe::17',
      source: 'forwarded',
    });
    assert.deepEqual(at('::1', { forwarded: 'for=unknown, for=10.0.0.2' }, options), {
      address: '10.0.0.2',
      source: 'malformed-header',
    });
    for (const bad of [
      'for="1.2.3.4',
      'for=1.2.3.4;',
      'for=[::1]',
      'proto=http',
      'for="1.2.3.\\4"',
      'for=1.2.3.4;for=5.6.7.8',
    ])
      assert.equal(at('::1', { forwarded: bad }, options).source, 'malformed-header', bad);
    assert.equal(at('::1', { forwarded: 'for="a,b", for=198.51.100.7' }, options).address, '198.51.100.7');
  });

  it('reads a Node IncomingMessage, a Fetch Request with its peer, and { peer, headers }', () => {
    const message = new IncomingMessage(new Socket());
    Object.defineProperty(message.socket, 'remoteAddress', { value: '::ffff:127.0.0.1' });
    message.headers['x-forwarded-for'] = '198.51.100.7';
    assert.equal(clientAddress(message).address, '198.51.100.7');
    const request = new Request('http://example.test/', { headers: { 'X-Forwarded-For': '198.51.100.8' } });
    assert.equal(clientAddress({ request, peer: '127.0.0.1' }).address, '198.51.100.8');
    assert.equal(clientAddress({ peer: '127.0.0.1', headers: request.headers }).address, '198.51.100.8');
    assert.deepEqual(clientAddress({ request, peer: undefined }), {
      address: undefined,
      source: 'untrusted-peer',
    });
  });

  it('options are checked once, at construction, naming the option and never the value', () => {
    const bad: [unknown, RegExp][] = [
      [{ trustedProxies: ['10.0.0.0/33'] }, / trustedProxies\[0\] must be a prefix length of at most 32$/],
      [{ trustedProxies: ['10.0.0.1/8'] }, /host bits/],
      [{ trustedProxies: ['example.com'] }, /trustedProxies\[0\]/],
      [{ trustedProxies: '10.0.0.0/8' }, /trustedProxies must be an array/],
      [{ header: 'x-client-ip' }, /header must be one of/],
      [{ hops: 0 }, /hops/],
      [{ header: 'x-real-ip', hops: 1 }, /hops/],
      [{ trustedProxy: [] }, /no option "trustedProxy"/],
    ];
    for (const [options, message] of bad)
      assert.throws(
        () => createClientAddress(options as ClientAddressOptions),
        (error: unknown) => isSluiceError(error, 'SLUICE_CONFIG') && message.test(error.message),
      );
    assert.doesNotThrow(() =>
      createClientAddress({ trustedProxies: ['::ffff:10.0.0.0/104', '0.0.0.0/0', '::/0'] }),
    );
  });

  it('IPv4-mapped trusted ranges and IPv6 ranges match every spelling', () => {
    const options = { trustedProxies: ['::ffff:10.0.0.0/104', '2001:db8:1::/48'] };
    for (const peer of ['10.1.2.3', '::ffff:10.1.2.3', '2001:db8:1:ffff::1', '2001:DB8:1:0::9'])
      assert.equal(at(peer, { 'x-forwarded-for': '198.51.100.7' }, options).address, '198.51.100.7', peer);
    assert.equal(
      at('2001:db8:2::1', { 'x-forwarded-for': '198.51.100.7' }, options).source,
      'untrusted-peer',
    );
  });
});
