import { configError } from '../core/errors.js';
import { IPV4, IPV6, parseIp, parsed } from './ip-parse.js';

/**
 * The IPv6 prefixes that carry an IPv4 address in their low bits, keyed by that IPv4 address:
 * - `64:ff9b::/96`, the NAT64 well-known prefix (RFC 6052): IPv4 clients reaching an IPv6-only
 *   service through a translator;
 * - `::ffff:0:0:0/96`, IPv4-translated addresses of stateless translation (SIIT, RFC 6145);
 * - `::/96`, the deprecated IPv4-compatible form `::a.b.c.d` (RFC 4291).
 * Keyed by their /64, every IPv4 client behind one translator would share one bucket.
 * IPv4-mapped `::ffff:a.b.c.d` is not listed: it is the same connection written by a dual-stack
 * socket and always counts as IPv4.
 */
export const IPV4_EMBEDDING_PREFIXES: readonly string[] = Object.freeze([
  '64:ff9b::/96',
  '::ffff:0:0:0/96',
  '::/96',
]);

/** The prefix lengths RFC 6052 defines an IPv4 embedding for. */
const LENGTHS = [32, 40, 48, 56, 64, 96];

/**
 * Internal: finds the IPv4 address an IPv6 address embeds, under a list of translation prefixes
 * compiled once. RFC 6052 places the 32 IPv4 bits right after the prefix, skipping bits 64 to 71
 * (the "u" octet), so one rule serves every length. Matching compares whole bytes (every length
 * is a multiple of 8) without allocating.
 */
export class Ipv4Embedding {
  /** Each prefix as 16 bytes. */
  private readonly bytes: Uint8Array;
  /** Each prefix's length in bytes. */
  private readonly lengths: Uint8Array;

  constructor(prefixes: readonly string[], option: string) {
    if (!Array.isArray(prefixes)) throw configError(option, 'an array of IPv6 prefixes', prefixes);
    this.bytes = new Uint8Array(prefixes.length * 16);
    this.lengths = new Uint8Array(prefixes.length);
    prefixes.forEach((prefix: unknown, index) => {
      const name = `${option}[${index}]`;
      const expected = `an IPv6 prefix of length ${LENGTHS.join(', ')} (IPv4-mapped is IPv4 already)`;
      if (typeof prefix !== 'string') throw configError(name, expected, prefix);
      const slash = prefix.indexOf('/');
      const digits = prefix.slice(slash + 1);
      const length = Number(digits);
      if (slash < 0 || !/^\d{2}$/.test(digits) || !LENGTHS.includes(length))
        throw configError(name, expected, prefix);
      if (parseIp(prefix, 0, slash) !== IPV6 || parsed.end !== slash)
        throw configError(name, expected, prefix);
      for (let b = 0; b < 16; b++) {
        const byte = groupByte(parsed.v6, b);
        if (b >= length / 8 && byte !== 0)
          throw configError(name, 'a prefix without host bits set (the network address)', prefix);
        this.bytes[index * 16 + b] = byte;
      }
      this.lengths[index] = length / 8;
    });
  }

  /**
   * The IPv4 address (uint32) that `groups` embeds under one of the prefixes, or -1. An embedded
   * address in 0.0.0.0/8 ("this network") is no client: it keeps `::` and `::1` IPv6.
   */
  extract(groups: Uint16Array): number {
    const lengths = this.lengths;
    for (let p = 0; p < lengths.length; p++) {
      const length = lengths[p] as number;
      let b = 0;
      while (b < length && groupByte(groups, b) === this.bytes[p * 16 + b]) b++;
      if (b < length) continue;
      let v4 = 0;
      for (let taken = 0; taken < 4; b++) {
        if (b === 8) continue; // the "u" octet
        v4 = v4 * 256 + groupByte(groups, b);
        taken++;
      }
      return v4 < 0x01000000 ? -1 : v4;
    }
    return -1;
  }

  /**
   * Pushes onto `out` the IPv4 ranges (network, mask pairs of uint32) whose addresses the IPv6
   * range `groups`/`prefix` embeds under one of the prefixes, so that a list reads its entries
   * as the key reads its clients: `64:ff9b::203.0.113.0/120` is 203.0.113.0/24, and a range
   * holding a whole translation prefix (`64:ff9b::/96`, `::/0`) holds every IPv4 address, the
   * way one holding `::ffff:0:0/96` already does. Bits the range fixes in the "u" octet or
   * after the IPv4 bits do not narrow the IPv4 range: {@link extract} ignores them.
   */
  ipv4RangesWithin(groups: Uint16Array, prefix: number, out: number[]): void {
    const lengths = this.lengths;
    for (let p = 0; p < lengths.length; p++) {
      const bits = (lengths[p] as number) * 8;
      const shared = Math.min(bits, prefix);
      let b = 0;
      for (; b * 8 < shared; b++) {
        const keep = Math.min(8, shared - b * 8);
        const mask = (0xff << (8 - keep)) & 0xff;
        if ((groupByte(groups, b) & mask) !== ((this.bytes[p * 16 + b] as number) & mask)) break;
      }
      if (b * 8 < shared) continue;
      if (prefix <= bits) {
        out.push(0, 0);
        continue;
      }
      let v4 = 0;
      let fixed = 0;
      for (let taken = 0, at = bits / 8; taken < 4; at++) {
        if (at === 8) continue; // the "u" octet
        v4 = v4 * 256 + groupByte(groups, at);
        fixed += Math.max(0, Math.min(8, prefix - at * 8));
        taken++;
      }
      const mask = fixed === 0 ? 0 : (0xffffffff << (32 - fixed)) >>> 0;
      const network = (v4 & mask) >>> 0;
      // A range wholly inside 0.0.0.0/8 embeds no client (extract reads those as IPv6).
      if (fixed >= 8 && network < 0x01000000) continue;
      out.push(network, mask);
    }
  }
}

/**
 * The default translation prefixes compiled once: what `ipKey` reads by default, and what
 * the allow, deny and `sourceCidrs` lists always read.
 */
export const DEFAULT_IPV4_EMBEDDING = new Ipv4Embedding(IPV4_EMBEDDING_PREFIXES, 'ipv4Embedded');

/**
 * Parses `s[start, end)` as a client address, the one reading shared by the key and the lists:
 * IPv4, IPv4-mapped IPv6 and an IPv6 address that embeds an IPv4 client under `embedding` all
 * answer IPV4 with `parsed.v4` set (`parsed.plainV4` only for dotted text), any other IPv6
 * address IPV6, anything else NOT_IP. Two readings would let a client slip through a list under
 * a spelling its key still counts as the listed address.
 */
export function parseClientIp(s: string, start: number, end: number, embedding: Ipv4Embedding): number {
  const family = parseIp(s, start, end);
  if (family !== IPV6) return family;
  const v4 = embedding.extract(parsed.v6);
  if (v4 < 0) return IPV6;
  parsed.v4 = v4;
  return IPV4;
}

function groupByte(groups: Uint16Array, b: number): number {
  const group = groups[b >> 1] as number;
  return b & 1 ? group & 255 : group >> 8;
}
