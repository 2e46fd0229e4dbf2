/**
 * The guard's list membership agrees with the keys layer's CidrSet, and with a reference written
 * here in 128-bit arithmetic, for random addresses and prefixes: IPv4, IPv6 and IPv4-mapped IPv6
 * (whose clients and ranges are the IPv4 ones they embed).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createGuard } from '../../src/http/guard.js';
import { MemoryStore, createLimiter, tokenBucket } from '../../src/index.js';
import { CidrSet } from '../../src/keys/cidr-set.js';
import { NOT_IP, parseIp } from '../../src/keys/ip-parse.js';

const limits = createLimiter({
  name: 'p',
  rule: tokenBucket({ limit: 1_000_000, period: '1s' }),
  store: new MemoryStore(),
});

const dotted = (v: number) => [24, 16, 8, 0].map((s) => (v >>> s) & 255).join('.');
const hexGroups = (v: bigint) =>
  Array.from({ length: 8 }, (_, g) => ((v >> BigInt(112 - g * 16)) & 0xffffn).toString(16)).join(':');

interface Case {
  range: string;
  client: string;
  /** Membership by the reference: same family, and the first `prefix` bits equal. */
  member: boolean;
}

const mask32 = (prefix: number) => (prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0);
const mask128 = (prefix: number) =>
  prefix === 0 ? 0n : ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - prefix)) - 1n);

/** An IPv4 range, written plain or as IPv4-mapped IPv6, with a client near it or anywhere. */
const v4Case: fc.Arbitrary<Case> = fc
  .record({
    base: fc.nat({ max: 0xffffffff }),
    prefix: fc.integer({ min: 0, max: 32 }),
    host: fc.nat({ max: 0xffffffff }),
    near: fc.boolean(),
    mappedRange: fc.boolean(),
    mappedClient: fc.boolean(),
    v6Client: fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
    otherFamily: fc.boolean(),
  })
  .map(({ base, prefix, host, near, mappedRange, mappedClient, v6Client, otherFamily }) => {
    const mask = mask32(prefix);
    const net = (base & mask) >>> 0;
    const range = mappedRange ? `::ffff:${dotted(net)}/${96 + prefix}` : `${dotted(net)}/${prefix}`;
    if (otherFamily) return { range, client: hexGroups(v6Client | (1n << 127n)), member: false };
    const address = near ? (net | (host & ~mask)) >>> 0 : host;
    const client = mappedClient ? `::ffff:${dotted(address)}` : dotted(address);
    return { range, client, member: (address & mask) >>> 0 === net };
  });

/** An IPv6 range (outside the IPv4-mapped space) with a client near it, anywhere, or IPv4. */
const v6Case: fc.Arbitrary<Case> = fc
  .record({
    base: fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
    prefix: fc.integer({ min: 0, max: 128 }),
    host: fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
    near: fc.boolean(),
    v4Client: fc.option(fc.nat({ max: 0xffffffff }), { nil: undefined }),
  })
  .filter(({ base, prefix }) => prefix === 0 || base >> 127n === 1n)
  .map(({ base, prefix, host, near, v4Client }) => {
    const mask = mask128(prefix);
    const net = base & mask;
    const range = `${hexGroups(net)}/${prefix}`;
    // An IPv4 client is in an IPv6 range only when the range holds the whole IPv4-mapped block
    // ::ffff:0:0/96; of these ranges (top bit set, or ::/0) only ::/0 does.
    if (v4Client !== undefined) return { range, client: dotted(v4Client), member: prefix === 0 };
    const address = near ? net | (host & ~mask) : host | (1n << 127n);
    return { range, client: hexGroups(address), member: (address & mask) === net };
  });

describe('list membership (property)', () => {
  it('the guard denies exactly the clients CidrSet and the reference place in the range', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(v4Case, v6Case), async ({ range, client, member }) => {
        const set = new CidrSet([range], 'property');
        // Parsed after the set is built: the parser keeps its result in one shared scratch area.
        const family = parseIp(client, 0, client.length);
        assert.notEqual(family, NOT_IP);
        const inSet = set.hasParsed(family);
        const guard = createGuard<unknown>({ limits, key: () => 'k', deny: [range], address: () => client });
        const outcome = await guard.check({}, { method: 'GET', path: '/' });
        const denied = outcome.action === 'respond' && outcome.response.status === 403;
        assert.equal(inSet, member, `CidrSet and the reference on ${client} in ${range}`);
        assert.equal(denied, member, `the guard on ${client} in ${range}`);
      }),
      { numRuns: 500 },
    );
  });
});
