import { isIP } from 'node:net';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import {
  LOOPBACK,
  clientAddress,
  compositeKey,
  ipKey,
  isSluiceError,
  normalizeLogin,
  type ClientAddressOptions,
} from '../../src/index.js';

/** Eight groups, biased towards zero so that `::` runs are common. */
const groups = fc.oneof(
  fc.array(fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 0, max: 0xffff })), {
    minLength: 8,
    maxLength: 8,
  }),
  // NAT64 (64:ff9b::/96) and SIIT (::ffff:0:0:0/96) addresses with a random IPv4 client.
  fc
    .tuple(
      fc.constantFrom([0x64, 0xff9b, 0, 0, 0, 0], [0, 0, 0, 0, 0xffff, 0]),
      fc.integer({ min: 0, max: 0xffff }),
      fc.integer({ min: 0, max: 0xffff }),
    )
    .map(([high, g6, g7]) => [...high, g6, g7]),
);

/** Writes `parts` in a random one of the many legal spellings of one IPv6 address. */
const spelling = (parts: number[]) =>
  fc
    .record({
      pads: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 8, maxLength: 8 }),
      upper: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
      compress: fc.nat(),
      tail: fc.boolean(),
      zone: fc.option(fc.stringMatching(/^[a-z0-9]{1,6}$/), { nil: undefined }),
    })
    .map(({ pads, upper, compress, tail, zone }) => {
      const text = parts.map((part, i) => {
        const hex = part
          .toString(16)
          .padStart(Math.min(4, part.toString(16).length + (pads[i] as number)), '0');
        return upper[i] ? hex.toUpperCase() : hex;
      });
      let count = 8;
      if (tail) {
        const high = parts[6] as number;
        const low = parts[7] as number;
        text.splice(6, 2, `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`);
        count = 7;
      }
      // Compress one run of zero groups (any run, not only the longest: all are legal).
      const runs: [number, number][] = [];
      for (let i = 0; i < count; i++) {
        if (parts[i] !== 0 || (tail && i >= 6)) continue;
        let j = i;
        while (j < count && parts[j] === 0 && !(tail && j >= 6)) j++;
        for (let a = i; a < j; a++) for (let b = a + 1; b <= j; b++) runs.push([a, b]);
        i = j;
      }
      let address = text.join(':');
      if (runs.length > 0 && compress % 2 === 0) {
        const [a, b] = runs[compress % runs.length] as [number, number];
        address = `${text.slice(0, a).join(':')}::${text.slice(b, count).join(':')}`;
      }
      return zone === undefined ? address : `${address}%${zone}`;
    });

const isMapped = (parts: number[]) => parts.slice(0, 5).every((p) => p === 0) && parts[5] === 0xffff;

/** The IPv4 client of a NAT64, SIIT or IPv4-compatible address (the default embeddings), if any. */
function embeddedV4(parts: number[]): string | undefined {
  const high = parts
    .slice(0, 6)
    .map((g) => g.toString(16))
    .join(':');
  if (!['64:ff9b:0:0:0:0', '0:0:0:0:ffff:0', '0:0:0:0:0:0'].includes(high)) return undefined;
  const [g6, g7] = [parts[6] as number, parts[7] as number];
  if (g6 >> 8 === 0) return undefined; // 0.0.0.0/8 is no client
  return `${g6 >> 8}.${g6 & 255}.${g7 >> 8}.${g7 & 255}`;
}

describe('key properties (fast-check)', () => {
  it('random spellings of one IPv6 address give one key', () => {
    fc.assert(
      fc.property(
        groups.chain((parts) => fc.tuple(fc.constant(parts), spelling(parts), spelling(parts))),
        ([parts, first, second]) => {
          assert.equal(ipKey(first), ipKey(second));
          assert.equal(ipKey(first, { ipv6Prefix: 128 }), ipKey(second, { ipv6Prefix: 128 }));
          const v4 = embeddedV4(parts);
          if (v4 !== undefined) assert.equal(ipKey(first), v4);
          else if (!isMapped(parts)) {
            // ipaddr.js is the reference for RFC 5952 text.
            assert.equal(ipKey(first, { ipv6Prefix: 128 }), new ipaddr.IPv6(parts).toRFC5952String());
            const network = ipaddr.IPv6.networkAddressFromCIDR(`${new ipaddr.IPv6(parts).toString()}/64`);
            assert.equal(ipKey(first), `${network.toRFC5952String()}/64`);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('the address parser agrees with node:net on random address-like text', () => {
    const text = fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF:.:%'), maxLength: 46 });
    fc.assert(
      fc.property(text, (value) => {
        fc.pre(!/%.*:/.test(value)); // node:net allows ':' in zone ids; RFC 6874 does not
        let accepted = true;
        try {
          ipKey(value);
        } catch (error) {
          assert.ok(isSluiceError(error, 'SLUICE_KEY_INVALID') || isSluiceError(error, 'SLUICE_KEY_MISSING'));
          accepted = false;
        }
        assert.equal(accepted, isIP(value) !== 0, value);
      }),
      { numRuns: 5000 },
    );
  });

  it('no error message repeats the request value it was given', () => {
    const value = fc.string({ minLength: 4, maxLength: 60 });
    fc.assert(
      fc.property(value, (text) => {
        for (const attempt of [
          () => ipKey(text),
          () => ipKey(text, { ipv6Prefix: 128 }),
          () => normalizeLogin(text),
        ])
          try {
            attempt();
          } catch (error) {
            assert.ok(error instanceof Error && !error.message.includes(text), text);
          }
      }),
      { numRuns: 2000 },
    );
  });

  it('random tuples never collide', () => {
    const part = fc.string({
      unit: fc.constantFrom('a', '1', ':', '|', '2', 'é'),
      minLength: 1,
      maxLength: 6,
    });
    const tuple = fc.array(part, { minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(tuple, tuple, (a, b) => {
        assert.equal(compositeKey(a) === compositeKey(b), JSON.stringify(a) === JSON.stringify(b));
      }),
      { numRuns: 5000 },
    );
  });

  it('normalizeLogin is stable: normalizing twice changes nothing', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (value) => {
        let once: string;
        try {
          once = normalizeLogin(value);
        } catch (error) {
          assert.ok(isSluiceError(error, 'SLUICE_KEY_INVALID'));
          return;
        }
        assert.equal(normalizeLogin(once), once);
      }),
      { numRuns: 3000 },
    );
  });

  const trusted: ClientAddressOptions = { trustedProxies: [...LOOPBACK, '10.0.0.0/8'] };
  const pieces = [
    ' ',
    '\t',
    ',',
    ':',
    '[',
    ']',
    '"',
    ';',
    '=',
    '%',
    '1',
    '2',
    '5',
    '0',
    '.',
    'a',
    'f',
    'for',
    '::',
    'é',
    '\u0000',
  ];
  const entry = fc.oneof(
    fc.constantFrom(
      '10.0.0.2',
      '198.51.100.7',
      '[2001:db8::1]:443',
      '1.2.3.4:80',
      'unknown',
      '',
      '::1',
      '::ffff:10.0.0.9',
    ),
    fc.array(fc.constantFrom(...pieces), { maxLength: 12 }).map((xs) => xs.join('')),
    fc.string({ unit: 'binary', maxLength: 20 }),
  );
  const headerValue = fc.oneof(
    fc.array(entry, { maxLength: 8 }).map((xs) => xs.join(',')),
    fc.array(entry, { maxLength: 8 }).map((xs) => xs.map((x) => `for=${x}`).join(', ')),
    fc.string({ unit: 'binary', maxLength: 60 }),
  );
  const headerSet = fc.oneof(headerValue, fc.array(headerValue, { minLength: 2, maxLength: 3 }));

  it('random header bytes never throw and are never trusted when malformed', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('127.0.0.1', '::1', '10.0.0.4', '198.51.100.9'),
        fc.constantFrom('x-forwarded-for', 'x-real-ip', 'forwarded') as fc.Arbitrary<'x-forwarded-for'>,
        headerSet,
        (peer, header, value) => {
          const result = clientAddress({ peer, headers: { [header]: value } }, { ...trustedFor[header] });
          if (peer === '198.51.100.9') assert.deepEqual(result, { address: peer, source: 'untrusted-peer' });
          // Whatever was chosen is an address, and it came from the peer or from the header text.
          assert.ok(
            typeof result.address === 'string' && isIP(result.address.replace(/%.*/, '')) !== 0,
            result.address,
          );
          const text = Array.isArray(value) ? value.join(', ') : value;
          assert.ok(result.address === peer || text.includes(result.address));
          if (result.source === 'socket') assert.equal(result.address, peer);
        },
      ),
      { numRuns: 5000 },
    );
  });

  const trustedFor = {
    'x-forwarded-for': trusted,
    'x-real-ip': { ...trusted, header: 'x-real-ip' },
    forwarded: { ...trusted, header: 'forwarded' },
  } as const;

  it('10 KB values and 1,000 entries are bounded: no throw, no trust beyond the walk limit', () => {
    const thousandTrusted = Array.from({ length: 1000 }, () => '10.0.0.2').join(', ');
    assert.deepEqual(
      clientAddress({ peer: '::1', headers: { 'x-forwarded-for': thousandTrusted } }, trusted),
      {
        address: '10.0.0.2',
        source: 'malformed-header',
      },
    );
    const thousand = `${Array.from({ length: 999 }, (_, i) => `6.6.${i >> 8}.${i & 255}`).join(',')},198.51.100.7`;
    assert.equal(
      clientAddress({ peer: '::1', headers: { 'x-forwarded-for': thousand } }, trusted).address,
      '198.51.100.7',
    );
    const big = 'x'.repeat(10 * 1024);
    for (const header of ['x-forwarded-for', 'x-real-ip', 'forwarded'] as const)
      assert.deepEqual(clientAddress({ peer: '::1', headers: { [header]: big } }, trustedFor[header]), {
        address: '::1',
        source: 'malformed-header',
      });
    const forwarded = Array.from({ length: 1000 }, () => 'for=10.0.0.2').join(', ');
    assert.equal(
      clientAddress({ peer: '::1', headers: { forwarded } }, trustedFor.forwarded).source,
      'malformed-header',
    );
  });
});
