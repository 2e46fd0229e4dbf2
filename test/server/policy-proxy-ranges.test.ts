/**
 * The named ranges of `clients.trustedProxies`: `loopback`, `linklocal` and `uniquelocal`, as
 * the library's `trustedProxies` and Express's `trust proxy` spell them. A peer in a named range
 * has its proxy header read; any other peer's header is ignored; a name the library does not
 * know is an error at its line; the schema offers the same names.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { NAMED_RANGES } from '../../src/keys/cidr-set.js';
import { fileChoices } from '../../src/server/policy/file-types.js';
import { compiled, issuesOf } from './policy-support.js';

const policy = compiled(`version: 1
clients: { trustedProxies: [linklocal, uniquelocal], proxyHeader: x-real-ip }
rules:
  - name: everything
    algorithm: fixed-window
    limit: 5
    window: 1m
`);
after(() => policy.close());

const clientBehind = (peer: string) =>
  policy.read({ method: 'GET', path: '/', address: peer, headers: { 'x-real-ip': '192.0.2.8' } }).address;

describe('named ranges in clients.trustedProxies', () => {
  it('a peer in linklocal or uniquelocal is a trusted proxy: its header names the client', () => {
    for (const peer of ['169.254.3.4', 'fe80::1', '10.1.2.3', '172.16.0.9', '192.168.1.1', 'fd00::7'])
      assert.equal(clientBehind(peer), '192.0.2.8', peer);
  });

  it('any other peer, loopback too when it is not listed, is the client itself', () => {
    assert.equal(clientBehind('203.0.113.1'), '203.0.113.1');
    assert.equal(clientBehind('172.32.0.1'), '172.32.0.1');
    assert.equal(clientBehind('127.0.0.1'), '127.0.0.1');
  });

  it('all three names load beside ranges; another word is an error at its place', () => {
    const both = compiled(
      'version: 1\nclients: { trustedProxies: [loopback, linklocal, uniquelocal, 192.0.2.0/24] }\nrules: []\n',
    );
    both.close();
    assert.deepEqual(
      issuesOf('version: 1\nclients: { trustedProxies: [uniquelocal, sitelocal] }\nrules: []\n'),
      ['2:42: clients.trustedProxies[1] must be an IP address or CIDR without zone id'],
    );
  });

  it("the schema and the file's model offer the library's names", () => {
    const schema = JSON.parse(readFileSync(new URL('../../sluice.schema.json', import.meta.url), 'utf8'));
    assert.deepEqual(fileChoices.proxyRange, Object.keys(NAMED_RANGES));
    assert.deepEqual(schema.$defs.proxyRange.anyOf[0].enum, fileChoices.proxyRange);
    assert.deepEqual(schema.$defs.clients.properties.trustedProxies.items, { $ref: '#/$defs/proxyRange' });
  });
});
