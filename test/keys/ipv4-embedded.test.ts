import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { clientAddress, createIpKey, ipKey, isSluiceError, type IpKeyOptions } from '../../src/index.js';
import { IPV4_EMBEDDING_PREFIXES } from '../../src/keys/ipv4-embedded.js';

describe('ipKey: IPv6 addresses that embed an IPv4 client', () => {
  it('NAT64 well-known prefix 64:ff9b::/96 is keyed by its IPv4 address', () => {
    for (const spelling of ['64:ff9b::198.51.100.7', '64:FF9B::c633:6407', '64:ff9b:0:0:0:0:c633:6407'])
      assert.equal(ipKey(spelling), '198.51.100.7', spelling);
    // Two IPv4 clients behind one translator are two buckets, not one /64.
    assert.notEqual(ipKey('64:ff9b::198.51.100.7'), ipKey('64:ff9b::198.51.100.8'));
  });

  it('IPv4-compatible ::a.b.c.d and SIIT ::ffff:0:a.b.c.d are keyed by their IPv4 address', () => {
    assert.equal(ipKey('::198.51.100.7'), '198.51.100.7');
    assert.equal(ipKey('::c633:6407'), '198.51.100.7');
    assert.equal(ipKey('::ffff:0:198.51.100.7'), '198.51.100.7');
    assert.equal(ipKey('0:0:0:0:ffff:0:c633:6407'), '198.51.100.7');
  });

  it('the IPv4 prefix applies to embedded addresses too', () => {
    assert.equal(ipKey('64:ff9b::198.51.100.7', { ipv4Prefix: 24 }), '198.51.100.0/24');
    assert.equal(ipKey('::ffff:0:198.51.100.7', { ipv4Prefix: 16 }), '198.51.0.0/16');
  });

  it('"this network" 0.0.0.0/8 is not an embedded client: ::, ::1 and the like stay IPv6', () => {
    assert.equal(ipKey('::1'), '::/64');
    assert.equal(ipKey('::1', { ipv6Prefix: 128 }), '::1');
    assert.equal(ipKey('::', { ipv6Prefix: 128 }), '::');
    assert.equal(ipKey('64:ff9b::5', { ipv6Prefix: 128 }), '64:ff9b::5');
  });

  it('a network-specific prefix of any RFC 6052 length can be added (its own examples)', () => {
    const cases: [string, string][] = [
      ['2001:db8::/32', '2001:db8:c000:221::'],
      ['2001:db8:100::/40', '2001:db8:1c0:2:21::'],
      ['2001:db8:122::/48', '2001:db8:122:c000:2:2100::'],
      ['2001:db8:122:300::/56', '2001:db8:122:3c0:0:221::'],
      ['2001:db8:122:344::/64', '2001:db8:122:344:c0:2:2100:0'],
      ['2001:db8:122:344::/96', '2001:db8:122:344::192.0.2.33'],
    ];
    for (const [prefix, address] of cases) {
      const keyOf = createIpKey({ ipv4Embedded: [...IPV4_EMBEDDING_PREFIXES, prefix] });
      assert.equal(keyOf(address), '192.0.2.33', prefix);
      assert.equal(keyOf('64:ff9b::198.51.100.7'), '198.51.100.7', prefix);
      assert.notEqual(ipKey(address), '192.0.2.33', 'not without the option');
    }
  });

  it('an empty list keys every IPv6 address by its prefix', () => {
    const options: IpKeyOptions = { ipv4Embedded: [] };
    assert.equal(ipKey('64:ff9b::198.51.100.7', options), '64:ff9b::/64');
    assert.equal(ipKey('::198.51.100.7', options), '::/64');
    // IPv4-mapped is the same address written by a dual-stack socket: always IPv4.
    assert.equal(ipKey('::ffff:198.51.100.7', options), '198.51.100.7');
  });

  it('the option is validated at construction, naming the option', () => {
    for (const ipv4Embedded of [
      '64:ff9b::/96',
      ['64:ff9b::'],
      ['64:ff9b::/80'],
      ['198.51.100.0/24'],
      ['::ffff:0:0/96'],
      ['64:ff9b::1/96'],
      ['2001:db8::/033'],
      [42],
    ])
      assert.throws(
        () => createIpKey({ ipv4Embedded } as unknown as IpKeyOptions),
        (error: unknown) => isSluiceError(error, 'SLUICE_CONFIG') && /ipv4Embedded/.test(error.message),
        JSON.stringify(ipv4Embedded),
      );
  });

  it('a translated form of a trusted proxy address is not that proxy', () => {
    for (const peer of ['64:ff9b::127.0.0.1', '::127.0.0.1', '::ffff:0:127.0.0.1'])
      assert.equal(
        clientAddress({ peer, headers: { 'x-forwarded-for': '198.51.100.7' } }).source,
        'untrusted-peer',
        peer,
      );
  });
});
