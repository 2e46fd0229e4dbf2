import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CidrSet } from '../../src/keys/cidr-set.js';
import { NOT_IP, parseIp } from '../../src/keys/ip-parse.js';
import { isSluiceError } from '../../src/index.js';

function holds(ranges: string[], client: string): boolean {
  const set = new CidrSet(ranges, 'test');
  const family = parseIp(client, 0, client.length);
  assert.notEqual(family, NOT_IP);
  return set.hasParsed(family);
}

describe('CidrSet and IPv4 clients in IPv6 ranges', () => {
  it('an IPv6 range holding the whole IPv4-mapped block holds every IPv4 client, as its message promises', () => {
    for (const range of ['::/0', '::/64', '::/80', '::ffff:0:0/96']) {
      assert.equal(holds([range], '203.0.113.7'), true, range);
      assert.equal(holds([range], '::ffff:203.0.113.7'), true, range);
    }
  });

  it('a narrower or elsewhere IPv6 range holds no IPv4 client', () => {
    for (const range of ['::/97', '2001:db8::/32', '::1/128', '64:ff9b::/96', '::fffe:0:0/96']) {
      assert.equal(holds([range], '203.0.113.7'), false, range);
    }
  });

  it('names the entry by position and never quotes it', () => {
    assert.throws(
      () => new CidrSet(['10.0.0.0/8', 'secret-host/99'], 'trustedProxies'),
      (e: unknown) =>
        isSluiceError(e, 'SLUICE_CONFIG') &&
        (e as Error).message.startsWith('trustedProxies[1] must be') &&
        !(e as Error).message.includes('secret-host'),
    );
  });
});
