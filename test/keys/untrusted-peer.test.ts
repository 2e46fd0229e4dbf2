import { isIP } from 'node:net';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import {
  LOOPBACK,
  clientAddress,
  createClientAddress,
  type ClientAddressFunction,
  type ClientAddressOptions,
  type ProxyHeader,
} from '../../src/index.js';

const extra = '10.0.0.0/8';
const ranges = [...LOOPBACK, extra].map((cidr) => ipaddr.parseCIDR(cidr));

/** The reference answer, from ipaddr.js (liberal: anything it may read as trusted is skipped). */
function maybeTrusted(peer: string): boolean {
  const text = peer.replace(/%.*$/s, '');
  if (!ipaddr.isValid(text) && isIP(text) === 0) return false;
  try {
    let address = ipaddr.parse(text);
    if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress())
      address = (address as ipaddr.IPv6).toIPv4Address();
    return ranges.some((range) => address.kind() === range[0].kind() && address.match(range));
  } catch {
    return true; // unsure: leave it out of the property
  }
}

const headerValue: Record<ProxyHeader, string> = {
  'x-forwarded-for': '198.51.100.7',
  'x-real-ip': '198.51.100.7',
  forwarded: 'for=198.51.100.7',
};

/** No header read: the peer itself (undefined when it has no text), and the source says so. */
function assertUntrusted(resolve: ClientAddressFunction, peer: string, header: ProxyHeader): void {
  const expected = { address: peer === '' ? undefined : peer, source: 'untrusted-peer' };
  const headers = { [header]: headerValue[header] };
  assert.deepEqual(resolve({ peer, headers }), expected);
  assert.deepEqual(resolve({ socket: { remoteAddress: peer }, headers }), expected);
  assert.deepEqual(resolve({ request: { headers }, peer }), expected);
}

const untrustedAddress = fc.oneof(
  fc.ipV4().filter((a) => !a.startsWith('127.') && !a.startsWith('10.')),
  fc.ipV6().filter((a) => !maybeTrusted(a)),
);
const peerText = fc.oneof(
  fc.constant(''),
  fc.string({ maxLength: 24 }),
  fc.string({ unit: fc.constantFrom(...'0123456789abcdef:.%[] '), maxLength: 24 }),
  fc.constantFrom(
    ' 127.0.0.1',
    '127.0.0.1 ',
    '127.0.0.01',
    '127.1',
    '[::1]',
    '::1%',
    '127.0.0.1:80',
    'localhost',
    '0x7f.0.0.1',
  ),
  untrustedAddress,
);

describe('clientAddress: a peer that is not a trusted address', () => {
  it('an empty peer is not a trusted proxy (fresh resolver, socket and peer forms)', () => {
    for (const header of ['x-forwarded-for', 'x-real-ip', 'forwarded'] as const) {
      assertUntrusted(createClientAddress({ header }), '', header);
      // A fresh resolver per form: the first request a process sees may come from such a peer.
      const headers = { [header]: headerValue[header] };
      assert.deepEqual(createClientAddress({ header })({ socket: { remoteAddress: '' }, headers }), {
        address: undefined,
        source: 'untrusted-peer',
      });
      assert.deepEqual(createClientAddress({ header })({ socket: null, headers }), {
        address: undefined,
        source: 'untrusted-peer',
      });
    }
  });

  it('the shared default clientAddress(req) does not trust an empty peer either', () => {
    assert.deepEqual(clientAddress({ peer: '', headers: { 'x-forwarded-for': '198.51.100.7' } }), {
      address: undefined,
      source: 'untrusted-peer',
    });
  });

  it('property: for any peer outside the trusted set, no header is read', () => {
    const options: ClientAddressOptions[] = (['x-forwarded-for', 'x-real-ip', 'forwarded'] as const).map(
      (header) => ({ header, trustedProxies: [...LOOPBACK, extra] }),
    );
    fc.assert(
      fc.property(
        peerText,
        fc.constantFrom(0, 1, 2),
        fc.boolean(),
        fc.constantFrom('127.0.0.1', '::1', '10.1.2.3'),
        (peer, which, warm, trustedPeer) => {
          fc.pre(!maybeTrusted(peer));
          const option = options[which] as ClientAddressOptions;
          const header = option.header as ProxyHeader;
          const resolve = createClientAddress(option);
          // A resolver that has just served a trusted proxy must decide afresh for this peer.
          if (warm) resolve({ peer: trustedPeer, headers: {} });
          assertUntrusted(resolve, peer, header);
        },
      ),
      { numRuns: 3000 },
    );
  });
});
