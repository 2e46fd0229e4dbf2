import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createIpKey, ipKey, isSluiceError } from '../../src/index.js';

describe('ipKey', () => {
  it('every spelling of one IPv6 address gives one key, by its /64', () => {
    const spellings = [
      '2001:db8:0:1:2:3:4:5',
      '2001:0DB8:0000:0001:0002:0003:0004:0005',
      '2001:db8::1:2:3:4:5',
      '2001:db8:0:1:2:3:0.4.0.5',
      '2001:db8:0:1:2:3:4:5%eth0',
      '2001:db8:0:1:ffff:ffff:ffff:ffff',
    ];
    for (const spelling of spellings) assert.equal(ipKey(spelling), '2001:db8:0:1::/64', spelling);
    assert.equal(ipKey('2001:db8:0:2::1'), '2001:db8:0:2::/64');
  });

  it('IPv4 is keyed as is; IPv4-mapped IPv6 counts as IPv4', () => {
    for (const spelling of [
      '198.51.100.7',
      '::ffff:198.51.100.7',
      '::FFFF:c633:6407',
      '0:0:0:0:0:ffff:198.51.100.7',
    ])
      assert.equal(ipKey(spelling), '198.51.100.7', spelling);
  });

  it('prefixes are configurable; full length gives the RFC 5952 address', () => {
    assert.equal(ipKey('2001:db8:aa:bb:1::1', { ipv6Prefix: 48 }), '2001:db8:aa::/48');
    assert.equal(ipKey('2001:DB8::0:1', { ipv6Prefix: 128 }), '2001:db8::1');
    assert.equal(ipKey('fe80::1%eth0', { ipv6Prefix: 128 }), 'fe80::1');
    assert.equal(ipKey('198.51.100.7', { ipv4Prefix: 24 }), '198.51.100.0/24');
    assert.equal(ipKey('1:0:0:1:0:0:0:1', { ipv6Prefix: 128 }), '1:0:0:1::1');
    assert.equal(createIpKey({ ipv6Prefix: 56 })('2001:db8:0:1ff::'), '2001:db8:0:100::/56');
  });

  it('IPv4 text with leading zeros or short forms is refused, not guessed', () => {
    for (const text of [
      '010.0.0.1',
      '127.1',
      '0x7f.0.0.1',
      '1.2.3.4.',
      ' 1.2.3.4',
      '[::1]',
      '1::2::3',
      'zz-top',
    ])
      assert.throws(
        () => ipKey(text),
        (error: unknown) => isSluiceError(error, 'SLUICE_KEY_INVALID') && !error.message.includes(text),
        text,
      );
  });

  it('no address is a developer error (500), not a pass', () => {
    for (const missing of [undefined, '', null])
      assert.throws(
        () => ipKey(missing as string | undefined),
        (error: unknown) => isSluiceError(error, 'SLUICE_KEY_MISSING'),
      );
    assert.throws(
      () => ipKey(42 as unknown as string),
      (error: unknown) => isSluiceError(error, 'SLUICE_KEY_INVALID'),
    );
  });

  it('prefix options are validated at construction', () => {
    for (const options of [
      { ipv6Prefix: 0 },
      { ipv6Prefix: 129 },
      { ipv4Prefix: 33 },
      { ipv4Prefix: 1.5 },
      { v6: 64 },
    ])
      assert.throws(
        () => createIpKey(options as never),
        (error: unknown) => isSluiceError(error, 'SLUICE_CONFIG'),
        JSON.stringify(options),
      );
  });
});
