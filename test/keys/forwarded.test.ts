import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LOOPBACK, clientAddress, type ClientAddressOptions } from '../../src/index.js';

const walk: ClientAddressOptions = { header: 'forwarded', trustedProxies: [...LOOPBACK, '10.0.0.0/8'] };
const twoHops: ClientAddressOptions = { ...walk, hops: 2 };

/** What our proxies append: the client they saw, then the load balancer's own hop. */
const appended = (client: string) => `for=${client};proto=https, for=10.0.0.2`;

const forwarded = (value: string | string[], options: ClientAddressOptions) =>
  clientAddress({ peer: '10.0.0.3', headers: { forwarded: value } }, options);

describe('Forwarded: what the client wrote on the left cannot change its key', () => {
  it('a syntax error in the client-written part does not make the header unusable', () => {
    for (const prefix of [
      'for="6.6.6.6',
      'for=',
      '"',
      '\\',
      'for="a\\", by=x',
      ';;',
      ',,',
      'for=6.6.6.6;for=7.7.7.7',
      'garbage with spaces',
      'for=[::1]',
    ])
      for (const options of [walk, twoHops])
        assert.deepEqual(
          forwarded(`${prefix}, ${appended('198.51.100.7')}`, options),
          { address: '198.51.100.7', source: 'forwarded' },
          prefix,
        );
  });

  it('a repeated Forwarded header is one list: the client-written first one is never parsed', () => {
    const value = ['for="6.6.6.6', appended('198.51.100.7')];
    assert.deepEqual(forwarded(value, walk), { address: '198.51.100.7', source: 'forwarded' });
    const headers = new Headers();
    headers.append('forwarded', 'for="[::1');
    headers.append('forwarded', appended('"[2001:db8::7]:4711"'));
    assert.deepEqual(clientAddress({ peer: '::1', headers }, walk), {
      address: '2001:db8::7',
      source: 'forwarded',
    });
  });

  it('the hops the walk does reach are still read strictly', () => {
    for (const value of [
      'for=198.51.100.7, for="10.0.0.2',
      'for=198.51.100.7, for=10.0.0.2;',
      'for=198.51.100.7, for="10.0.0.\\2"',
      'for=198.51.100.7, proto=https',
      'for=198.51.100.7, for=10.0.0.2;for=10.0.0.4',
      'for=198.51.100.7, ',
    ])
      assert.deepEqual(forwarded(value, walk), { address: '10.0.0.3', source: 'malformed-header' }, value);
    // A quoted value may hold a comma; the walk does not split inside it.
    assert.deepEqual(forwarded('for=198.51.100.7;host="a,b", for=10.0.0.2', walk), {
      address: '198.51.100.7',
      source: 'forwarded',
    });
    assert.deepEqual(forwarded('for=198.51.100.7;host="a\\"b,c", for=10.0.0.2', walk), {
      address: '198.51.100.7',
      source: 'forwarded',
    });
  });

  it('property: for any client-written prefix, the decided address is the one without it', () => {
    const piece = fc.constantFrom(
      'for=',
      'for',
      '=',
      '"',
      '\\',
      ',',
      ';',
      ' ',
      '\t',
      '[',
      ']',
      ':',
      '6.6.6.6',
      '10.0.0.9',
      '::1',
      'proto=http',
      'by=_x',
      'unknown',
    );
    const prefix = fc.oneof(
      fc.array(piece, { maxLength: 12 }).map((xs) => xs.join('')),
      fc.string({ maxLength: 30 }),
      fc.string({ unit: 'binary', maxLength: 30 }),
    );
    // A client outside the trusted set: the walk stops at its entry (a trusted one walks on).
    const v4 = fc.ipV4().filter((a) => !a.startsWith('127.') && !a.startsWith('10.'));
    const client = fc.oneof(
      v4,
      fc
        .array(fc.integer({ min: 0, max: 0xffff }), { minLength: 6, maxLength: 6 })
        .map((groups) => `"[2001:db8:${groups.map((g) => g.toString(16)).join(':')}]"`),
      v4.map((a) => `"${a}:443"`),
    );
    const headers = fc.oneof(
      fc.tuple(prefix, client).map(([p, c]) => ({ with: `${p}, ${appended(c)}`, without: appended(c) })),
      fc.tuple(prefix, client).map(([p, c]) => ({ with: [p, appended(c)], without: appended(c) })),
    );
    fc.assert(
      fc.property(headers, fc.constantFrom(walk, twoHops), (value, options) => {
        const without = forwarded(value.without, options);
        assert.equal(without.source, 'forwarded');
        assert.deepEqual(forwarded(value.with, options), without);
      }),
      { numRuns: 3000 },
    );
  });
});
