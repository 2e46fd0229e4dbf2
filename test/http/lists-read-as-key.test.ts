/**
 * Allow and deny lists (and a server rule's `sourceCidrs`) read a client address exactly as
 * `ipKey` does: an IPv6 address the key counts as an IPv4 client (NAT64 `64:ff9b::a.b.c.d`,
 * SIIT `::ffff:0:a.b.c.d`, IPv4-compatible `::a.b.c.d`, IPv4-mapped `::ffff:a.b.c.d`) is that
 * IPv4 client on every list, and every other IPv6 address is matched as before.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { AddressList } from '../../src/http/address-list.js';
import { createGuard } from '../../src/http/guard.js';
import { MemoryStore, createLimiter, ipKey, tokenBucket } from '../../src/index.js';
import { compiled } from '../server/policy-support.js';

const limits = createLimiter({
  name: 'lists',
  rule: tokenBucket({ limit: 1_000_000, period: '1s' }),
  store: new MemoryStore(),
});

const dotted = (v: number) => [24, 16, 8, 0].map((s) => (v >>> s) & 255).join('.');
const groupsOf = (v: bigint) =>
  Array.from({ length: 8 }, (_, g) => Number((v >> BigInt(112 - g * 16)) & 0xffffn));
const mask128 = (prefix: number) =>
  prefix === 0 ? 0n : ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - prefix)) - 1n);

/** The translation prefixes the key reads by default, as the top 96 bits. */
const NAT64 = 0x64ff9bn << 96n;
const SIIT = 0xffffn << 48n;
const COMPATIBLE = 0n;
const MAPPED = 0xffffn << 32n;

/** One IPv6 address written in one of several spellings: full, `::` compressed, upper case, dotted tail. */
function spell(value: bigint, style: number): string {
  const groups = groupsOf(value);
  const hex = groups.map((g) => g.toString(16));
  switch (style % 4) {
    case 0:
      return hex.join(':');
    case 1:
      return groups.map((g) => g.toString(16).padStart(4, '0').toUpperCase()).join(':');
    case 2: {
      // The longest run of zero groups as `::` (the first run when runs tie).
      let best = -1;
      let length = 0;
      for (let i = 0; i < 8;) {
        let j = i;
        while (j < 8 && groups[j] === 0) j++;
        if (j - i > length) [best, length] = [i, j - i];
        i = j === i ? i + 1 : j;
      }
      if (length < 2) return hex.join(':');
      return `${hex.slice(0, best).join(':')}::${hex.slice(best + length).join(':')}`;
    }
    default:
      return `${hex.slice(0, 6).join(':')}:${dotted(Number(value & 0xffffffffn))}`;
  }
}

const ipv4 = fc.integer({ min: 0x01000000, max: 0xffffffff });

/** A CIDR entry: IPv4, IPv4-mapped, an IPv6 range inside or holding a translation prefix, or any IPv6 range. */
const entry: fc.Arbitrary<string> = fc.oneof(
  fc
    .record({ base: fc.nat({ max: 0xffffffff }), prefix: fc.integer({ min: 0, max: 32 }) })
    .map(({ base, prefix }) => {
      const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
      return `${dotted((base & mask) >>> 0)}/${prefix}`;
    }),
  fc
    .record({
      block: fc.constantFrom(NAT64, SIIT, COMPATIBLE, MAPPED),
      base: fc.nat({ max: 0xffffffff }),
      prefix: fc.integer({ min: 64, max: 128 }),
      style: fc.nat({ max: 3 }),
    })
    .map(({ block, base, prefix, style }) => {
      const net = (block | BigInt(base)) & mask128(prefix);
      return `${spell(net, style)}/${prefix}`;
    }),
  fc
    .record({
      base: fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
      prefix: fc.integer({ min: 0, max: 128 }),
    })
    .map(({ base, prefix }) => `${spell(base & mask128(prefix), 0)}/${prefix}`),
);

/** A random IPv6 list entry and its 128-bit network and prefix, for the reference. */
const v6Entry = fc
  .record({
    base: fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
    prefix: fc.integer({ min: 0, max: 128 }),
    style: fc.nat({ max: 2 }),
  })
  .map(({ base, prefix, style }) => {
    const net = base & mask128(prefix);
    return { text: `${spell(net, style)}/${prefix}`, net, prefix };
  });

/** The forms `ipKey` keys as 203.0.113.5 (and 203.0.113.5 itself is not among them). */
const forms = ['::ffff:203.0.113.5', '64:ff9b::203.0.113.5', '::ffff:0:203.0.113.5', '::203.0.113.5'];

async function deniedBy(deny: string[], client: string): Promise<boolean> {
  const guard = createGuard<unknown>({ limits, key: () => 'k', deny, address: () => client });
  const outcome = await guard.check({}, { method: 'GET', path: '/' });
  return outcome.action === 'respond' && outcome.response.status === 403;
}

describe('lists read an address as the key does', () => {
  it('deny 203.0.113.0/24 refuses every form the key counts as 203.0.113.5, in any spelling', async () => {
    const more = ['64:FF9B::CB00:7105', '0064:ff9b:0:0:0:0:cb00:7105', '::ffff:0:cb00:7105', '::cb00:7105'];
    for (const client of [...forms, ...more]) {
      assert.equal(ipKey(client), '203.0.113.5', client);
      assert.equal(await deniedBy(['203.0.113.0/24'], client), true, client);
      assert.equal(await deniedBy(['198.51.100.0/24'], client), false, client);
    }
  });

  it('an IPv6 entry is read as the key reads it: a range inside a translation prefix is the IPv4 range it carries', () => {
    const list = new AddressList(['64:ff9b::203.0.113.0/120'], 'test');
    for (const client of ['203.0.113.5', '::ffff:203.0.113.5', '::203.0.113.5', '64:ff9b::cb00:71ff'])
      assert.equal(list.has(client), true, client);
    assert.equal(list.has('203.0.114.5'), false);
    // A range holding a whole translation prefix holds every IPv4 client, as ::ffff:0:0/96 does.
    for (const range of ['64:ff9b::/96', '::/96', '::ffff:0:0:0/96', '64:ff9b::/64'])
      assert.equal(new AddressList([range], 'test').has('198.51.100.7'), true, range);
    // ::1 and :: are no IPv4 client, for the key or for the lists.
    assert.equal(new AddressList(['::1/128'], 'test').has('0.0.0.1'), false);
    assert.equal(new AddressList(['::1/128'], 'test').has('::1'), true);
  });

  it('trusted proxies stay exact: a translated address is not the proxy it embeds', () => {
    const trust = new AddressList(['127.0.0.0/8'], 'trustedProxies', 'exact');
    assert.equal(trust.has('127.0.0.1'), true);
    assert.equal(trust.has('::ffff:127.0.0.1'), true);
    assert.equal(trust.has('64:ff9b::127.0.0.1'), false);
    assert.equal(trust.has('::127.0.0.1'), false);
  });

  it('property: the embedded form of any IPv4 address is on a list exactly when that address is', () => {
    fc.assert(
      fc.property(
        fc.array(entry, { minLength: 1, maxLength: 6 }),
        ipv4,
        fc.constantFrom(NAT64, SIIT, COMPATIBLE, MAPPED),
        fc.nat({ max: 3 }),
        (entries, address, block, style) => {
          const list = new AddressList(entries, 'property');
          const form = spell(block | BigInt(address), style);
          // Only forms the key maps to the address are in question.
          assert.equal(ipKey(form), dotted(address), form);
          assert.equal(list.has(form), list.has(dotted(address)), `${form} on ${entries.join(', ')}`);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('property: for a list of IPv6 ranges, an IPv6 address that embeds no IPv4 client matches as its 128 bits say', () => {
    fc.assert(
      fc.property(
        fc.array(v6Entry, { minLength: 1, maxLength: 6 }),
        fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
        fc.nat({ max: 2 }),
        fc.boolean(),
        (entries, host, style, near) => {
          // Half the clients are drawn inside the first range, so that matches are common.
          const first = entries[0]!;
          const value = near ? first.net | (host & ~mask128(first.prefix)) : host;
          const client = spell(value, style);
          fc.pre(ipKey(client, { ipv6Prefix: 128 }).includes(':'));
          const list = new AddressList(
            entries.map((e) => e.text),
            'property',
          );
          const member = entries.some((e) => (value & mask128(e.prefix)) === e.net);
          assert.equal(list.has(client), member, `${client} on ${entries.map((e) => e.text).join(', ')}`);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe("a server rule's lists and sourceCidrs read an address as its key does", () => {
  const policy = compiled(`version: 1
rules:
  - name: partners
    match: { sourceCidrs: [203.0.113.0/24] }
    algorithm: fixed-window
    limit: 5
    window: 1m
  - name: everyone
    deny: [198.51.100.0/24]
    algorithm: fixed-window
    limit: 5
    window: 1m
`);
  after(() => policy.close());

  it('sourceCidrs matches every form of an IPv4 client, and the key names that client', () => {
    for (const form of ['203.0.113.5', ...forms]) {
      const request = policy.read({ method: 'GET', path: '/', address: form });
      assert.deepEqual(
        policy.matching(request).map((rule) => rule.name),
        ['partners', 'everyone'],
        form,
      );
    }
  });

  it('deny refuses every form of a listed IPv4 client', () => {
    const everyone = policy.rule('everyone')!;
    for (const form of [
      '198.51.100.9',
      '::ffff:198.51.100.9',
      '64:ff9b::198.51.100.9',
      '::ffff:0:198.51.100.9',
      '::198.51.100.9',
    ])
      assert.equal(
        everyone.listed(policy.read({ method: 'GET', path: '/', address: form }).address),
        'denied',
        form,
      );
  });
});
