import { optionError } from '../core/errors.js';
import { IPV4, NOT_IP, parseIp, parsed } from './ip-parse.js';
import type { Ipv4Embedding } from './ipv4-embedded.js';

/**
 * The loopback ranges: 127.0.0.0/8, ::1 and the IPv4-mapped loopback ::ffff:127.0.0.0/104.
 * The default trusted-proxy set (a connection from any loopback address comes from
 * the same machine and deserves the same trust, whichever family the proxy used).
 */
export const LOOPBACK: readonly string[] = Object.freeze(['127.0.0.0/8', '::1/128', '::ffff:127.0.0.0/104']);

/**
 * The names a list of ranges may hold in place of ranges, as Express's `trust proxy` (proxy-addr)
 * and the server's policy file spell them: `loopback` (this machine), `linklocal` (169.254.0.0/16,
 * fe80::/10) and `uniquelocal` (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7: private
 * networks, where a proxy in a cluster usually is).
 */
export const NAMED_RANGES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  loopback: LOOPBACK,
  linklocal: Object.freeze(['169.254.0.0/16', 'fe80::/10']),
  uniquelocal: Object.freeze(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7']),
});

/**
 * Internal: a set of CIDR ranges compiled once, matched without allocation. IPv4 ranges are
 * (network, mask) pairs of uint32; IPv6 ranges are eight groups plus a prefix length.
 * IPv4-mapped IPv6 ranges with a prefix of at least 96 are stored as IPv4, because the parsers
 * report IPv4-mapped addresses as IPv4: `::ffff:10.0.0.0/104` and `10.0.0.0/8` are one range.
 * Given an `embedding`, the set reads its IPv6 entries as the key reads clients: the IPv4
 * addresses a range embeds are in the set as IPv4 too (see `Ipv4Embedding.ipv4RangesWithin`).
 * Trusted proxies are built without one: trust is never widened by a translation prefix.
 */
export class CidrSet {
  private readonly v4: Uint32Array;
  private readonly v6: Uint16Array;
  private readonly v6Prefixes: Uint8Array;

  constructor(ranges: readonly string[], option: string, embedding?: Ipv4Embedding) {
    if (!Array.isArray(ranges)) throw optionError(option, 'an array of CIDR strings');
    const v4: number[] = [];
    const v6: number[] = [];
    const v6Prefixes: number[] = [];
    const add = (range: unknown, name: string) => {
      if (typeof range !== 'string') throw optionError(name, 'a CIDR string');
      const named = Object.hasOwn(NAMED_RANGES, range) ? NAMED_RANGES[range] : undefined;
      if (named !== undefined) {
        for (const each of named) add(each, name);
        return;
      }
      const slash = range.indexOf('/');
      const end = slash < 0 ? range.length : slash;
      const family = parseIp(range, 0, end);
      if (family === NOT_IP || parsed.end !== end)
        throw optionError(name, 'an IP address or CIDR without zone id');
      const written = range.indexOf(':') >= 0 ? 128 : 32;
      const prefix = slash < 0 ? written : Number(range.slice(slash + 1));
      if (!/^\d{1,3}$/.test(range.slice(slash + 1)) && slash >= 0)
        throw optionError(name, 'a CIDR with a whole-number prefix');
      if (!Number.isInteger(prefix) || prefix > written)
        throw optionError(name, `a prefix length of at most ${written}`);
      if (family === IPV4) {
        // Mapped IPv6 text: its prefix counts 96 bits of ::ffff: first.
        const bits = written === 128 ? prefix - 96 : prefix;
        if (bits < 0) throw optionError(name, 'an IPv4-mapped range of at least /96 (use ::/0 for all)');
        const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
        if ((parsed.v4 & mask) >>> 0 !== parsed.v4)
          throw optionError(name, 'a CIDR without host bits set (the network address)');
        v4.push(parsed.v4, mask);
      } else {
        for (let g = 0; g < 8; g++) {
          const keep = Math.max(0, Math.min(16, prefix - g * 16));
          const groupMask = keep === 0 ? 0 : (0xffff << (16 - keep)) & 0xffff;
          if (((parsed.v6[g] as number) & groupMask) !== parsed.v6[g])
            throw optionError(name, 'a CIDR without host bits set (the network address)');
          v6.push(parsed.v6[g] as number);
        }
        v6Prefixes.push(prefix);
        // The parsers report an IPv4-mapped address as IPv4, so an IPv6 range that holds the
        // whole mapped block ::ffff:0:0/96 (::/0, ::/64 …) holds every IPv4 client too.
        if (prefix <= 96 && holdsMappedBlock(parsed.v6, prefix)) v4.push(0, 0);
        embedding?.ipv4RangesWithin(parsed.v6, prefix, v4);
      }
    };
    ranges.forEach((range: unknown, index) => add(range, `${option}[${index}]`));
    this.v4 = Uint32Array.from(v4);
    this.v6 = Uint16Array.from(v6);
    this.v6Prefixes = Uint8Array.from(v6Prefixes);
  }

  /** True when the IPv4 address `address` (uint32) lies in one of the ranges. */
  hasV4(address: number): boolean {
    const ranges = this.v4;
    for (let i = 0; i < ranges.length; i += 2)
      if ((address & (ranges[i + 1] as number)) >>> 0 === ranges[i]) return true;
    return false;
  }

  /** True when the IPv6 address `groups` lies in one of the ranges. */
  hasV6(groups: Uint16Array): boolean {
    const ranges = this.v6;
    const prefixes = this.v6Prefixes;
    for (let r = 0; r < prefixes.length; r++) {
      let left = prefixes[r] as number;
      let g = 0;
      for (; left > 0; g++, left -= 16) {
        const mask = left >= 16 ? 0xffff : (0xffff << (16 - left)) & 0xffff;
        if (((groups[g] as number) & mask) !== ranges[r * 8 + g]) break;
      }
      if (left <= 0) return true;
    }
    return false;
  }

  /** True when the last address parsed (`family` from the parser) lies in one of the ranges. */
  hasParsed(family: number): boolean {
    return family === IPV4 ? this.hasV4(parsed.v4) : this.hasV6(parsed.v6);
  }
}

/** The IPv4-mapped block ::ffff:0:0/96 as its first six groups. */
const MAPPED_BLOCK = [0, 0, 0, 0, 0, 0xffff];

/** True when the IPv6 range `groups`/`prefix` (prefix ≤ 96) contains ::ffff:0:0/96. */
function holdsMappedBlock(groups: Uint16Array, prefix: number): boolean {
  for (let g = 0, left = prefix; left > 0; g++, left -= 16) {
    const mask = left >= 16 ? 0xffff : (0xffff << (16 - left)) & 0xffff;
    if (((MAPPED_BLOCK[g] as number) & mask) !== ((groups[g] as number) & mask)) return false;
  }
  return true;
}
