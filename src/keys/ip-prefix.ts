import { SluiceError, configError, describeValue } from '../core/errors.js';
import { checkOptionKeys } from '../core/options.js';
import { compiledPerOptions } from './compiled.js';
import { IPV4, NOT_IP, formatIPv4, formatIPv6, knownPlainV4, parsed } from './ip-parse.js';
import {
  DEFAULT_IPV4_EMBEDDING,
  IPV4_EMBEDDING_PREFIXES,
  Ipv4Embedding,
  parseClientIp,
} from './ipv4-embedded.js';

/** Options of {@link ipKey} and {@link createIpKey}. */
export interface IpKeyOptions {
  /**
   * Prefix length IPv6 clients are keyed by. One IPv6 subscriber usually holds a whole /64
   * (2^64 addresses: a new one for every request costs nothing), so keying by the full address
   * lets one client take a fresh bucket per request. /56 or /48 is stricter still: some
   * providers hand those out per customer. 128 keys by the exact address.
   * @default 64
   */
  ipv6Prefix?: number;
  /**
   * Prefix length IPv4 clients are keyed by. IPv4 is scarce: one address is one subscriber (or
   * one NAT), so IPv4 is keyed as is.
   * @default 32
   */
  ipv4Prefix?: number;
  /**
   * IPv6 prefixes whose addresses carry an IPv4 client (RFC 6052 lengths 32, 40, 48, 56, 64 or
   * 96): such an address is keyed as that IPv4 address, with `ipv4Prefix`. Behind a NAT64 or
   * SIIT translator every IPv4 client appears inside one IPv6 prefix; keyed by its /64 they
   * would all share one bucket. Add your translator's network-specific prefix to the defaults;
   * `[]` keys every IPv6 address as IPv6. IPv4-mapped `::ffff:a.b.c.d` is always IPv4.
   * @default IPV4_EMBEDDING_PREFIXES — 64:ff9b::/96 (NAT64), ::ffff:0:0:0/96 (SIIT), ::/96 (IPv4-compatible)
   */
  ipv4Embedded?: readonly string[];
}

/** A compiled key function; see {@link createIpKey}. */
export type IpKeyFunction = (address: string | undefined) => string;

const optionKeys = ['ipv6Prefix', 'ipv4Prefix', 'ipv4Embedded'] as const;
const scratch = new Uint16Array(8);

class IpKeyer {
  private readonly v4Mask: number;
  private readonly v4Suffix: string;
  private readonly v6Prefix: number;
  private readonly v6Suffix: string;
  private readonly embedding: Ipv4Embedding;

  constructor(options: IpKeyOptions) {
    checkOptionKeys('ipKey', options, optionKeys);
    const { ipv6Prefix = 64, ipv4Prefix = 32, ipv4Embedded } = options;
    if (!Number.isSafeInteger(ipv6Prefix) || ipv6Prefix < 1 || ipv6Prefix > 128)
      throw configError('ipKey ipv6Prefix', 'a whole number from 1 to 128', ipv6Prefix);
    if (!Number.isSafeInteger(ipv4Prefix) || ipv4Prefix < 1 || ipv4Prefix > 32)
      throw configError('ipKey ipv4Prefix', 'a whole number from 1 to 32', ipv4Prefix);
    this.v4Mask = (0xffffffff << (32 - ipv4Prefix)) >>> 0;
    this.v4Suffix = ipv4Prefix === 32 ? '' : `/${ipv4Prefix}`;
    this.v6Prefix = ipv6Prefix;
    this.v6Suffix = ipv6Prefix === 128 ? '' : `/${ipv6Prefix}`;
    this.embedding =
      ipv4Embedded === undefined || ipv4Embedded === IPV4_EMBEDDING_PREFIXES
        ? DEFAULT_IPV4_EMBEDDING
        : new Ipv4Embedding(ipv4Embedded, 'ipKey ipv4Embedded');
  }

  key(address: unknown): string {
    if (typeof address !== 'string' || address.length === 0) {
      if (address === undefined || address === null || address === '')
        throw new SluiceError(
          'SLUICE_KEY_MISSING',
          `ipKey received ${describeValue(address)}: no client address (is the socket closed?)`,
        );
      throw new SluiceError('SLUICE_KEY_INVALID', 'ipKey needs an address string');
    }
    // The address the client-address step just chose is known to be canonical: no second parse.
    if (address === knownPlainV4.text && this.v4Suffix === '') return address;
    // The lists read addresses through the same function: a spelling the key counts as an IPv4
    // client is that client on an allow or deny list too.
    const family = parseClientIp(address, 0, address.length, this.embedding);
    // The message never repeats the address: it is personal data.
    if (family === NOT_IP)
      throw new SluiceError('SLUICE_KEY_INVALID', 'ipKey received text that is not an IP address');
    if (family === IPV4) {
      const masked = (parsed.v4 & this.v4Mask) >>> 0;
      // The strict parser accepts one spelling of each IPv4 address: the input is canonical.
      if (masked === parsed.v4 && parsed.plainV4 && parsed.end === address.length)
        return this.v4Suffix === '' ? address : address + this.v4Suffix;
      return formatIPv4(masked) + this.v4Suffix;
    }
    let left = this.v6Prefix;
    for (let g = 0; g < 8; g++, left -= 16) {
      const group = parsed.v6[g] as number;
      scratch[g] = left >= 16 ? group : left <= 0 ? 0 : group & ((0xffff << (16 - left)) & 0xffff);
    }
    return formatIPv6(scratch) + this.v6Suffix;
  }
}

/**
 * Compiles the prefix options once and returns a key function for client addresses.
 * Every spelling of one address gives one key: IPv6 is masked to its prefix and written in
 * RFC 5952 form (lower case, `::` for the longest zero run) with `/prefix`; IPv4-mapped IPv6
 * (`::ffff:198.51.100.7`) counts as IPv4, and so do the translated forms of `ipv4Embedded`
 * (`64:ff9b::198.51.100.7`); a zone id (`%eth0`) is dropped. IPv4 text must be
 * plain dotted decimal: `010.0.0.1` or `127.1` are refused, not guessed.
 * Throws SLUICE_KEY_MISSING (500) for no address, SLUICE_KEY_INVALID (400) for text that is not
 * an address.
 *
 * @default options `{ ipv6Prefix: 64, ipv4Prefix: 32, ipv4Embedded: IPV4_EMBEDDING_PREFIXES }`
 * @example
 * const keyOf = createIpKey({ ipv6Prefix: 56 });
 * keyOf('2001:DB8:0:1::7'); // '2001:db8::/56'
 */
export function createIpKey(options: IpKeyOptions = {}): IpKeyFunction {
  const keyer = new IpKeyer(options);
  return (address) => keyer.key(address);
}

const compiledFor = compiledPerOptions(createIpKey);

/**
 * The bucket key of a client address: see {@link createIpKey}. Compiles `options` on first use
 * and reuses the compiled form for the same options object.
 *
 * @default options `{ ipv6Prefix: 64, ipv4Prefix: 32, ipv4Embedded: IPV4_EMBEDDING_PREFIXES }`
 * @example
 * ipKey('2001:0db8:0000:0000:1:2:3:4'); // '2001:db8::/64'
 * ipKey('::ffff:203.0.113.7'); // '203.0.113.7'
 * ipKey('64:ff9b::203.0.113.7'); // '203.0.113.7' (NAT64)
 * ipKey('fe80::1%eth0', { ipv6Prefix: 128 }); // 'fe80::1'
 */
export function ipKey(address: string | undefined, options?: IpKeyOptions): string {
  return compiledFor(options)(address);
}
