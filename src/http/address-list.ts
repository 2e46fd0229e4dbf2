/**
 * The `allow` and `deny` lists of a route limit: addresses and CIDR ranges compiled once by the
 * keys layer's CIDR parser (one parser for trusted proxies and for these lists, so that both
 * read `::ffff:10.0.0.0/104` and `10.0.0.0/8` as the same range), matched without allocation.
 * A client is read by the key's own function, `parseClientIp`: an address `ipKey` keys as an
 * IPv4 client (`64:ff9b::203.0.113.5` is 203.0.113.5) is that client on the list too, or a deny
 * on 203.0.113.0/24 would miss a client its bucket counts as 203.0.113.5.
 */
import { SluiceError, isSluiceError, optionError } from '../core/errors.js';
import { CidrSet } from '../keys/cidr-set.js';
import { NOT_IP, parseIp } from '../keys/ip-parse.js';
import { DEFAULT_IPV4_EMBEDDING, parseClientIp, type Ipv4Embedding } from '../keys/ipv4-embedded.js';

/** How a list reads addresses: as the key reads clients, or exactly as written. */
export type AddressReading = 'as-key' | 'exact';

/**
 * Internal: a compiled allow or deny list. Setup errors name the option and the entry's
 * position, never the entry: lists are often read from configuration files or environment
 * variables, and an error message must not carry what they hold.
 */
export class AddressList {
  private readonly ranges: CidrSet;
  private readonly embedding: Ipv4Embedding | undefined;

  /**
   * @param option the option's name in error messages, e.g. `rateLimit deny`
   * @param reading `as-key` for lists of clients (allow, deny, sourceCidrs); `exact` for trusted
   *   proxies, which the client-address step matches exactly (trust is not translated)
   */
  constructor(entries: unknown, option: string, reading: AddressReading = 'as-key') {
    if (!Array.isArray(entries)) throw optionError(option, 'an array of IP addresses and CIDR ranges');
    for (let i = 0; i < entries.length; i++) checkEntry(entries[i], option, i);
    this.embedding = reading === 'as-key' ? DEFAULT_IPV4_EMBEDDING : undefined;
    this.ranges = new CidrSet(entries as string[], option, this.embedding);
  }

  /**
   * True when `address` (a client address as text, without port or brackets) lies in the list.
   * No address, or text that is not an IP address, is on no list: the guard cannot tell whose
   * it is, so neither list applies and the request goes on to skip and the key.
   */
  has(address: string | undefined): boolean {
    if (typeof address !== 'string') return false;
    const family =
      this.embedding === undefined
        ? parseIp(address, 0, address.length)
        : parseClientIp(address, 0, address.length, this.embedding);
    return family !== NOT_IP && this.ranges.hasParsed(family);
  }
}

/** Parses one entry alone, to say which one is wrong and why without quoting it. */
function checkEntry(entry: unknown, option: string, index: number): void {
  const name = `${option}[${index}]`;
  if (typeof entry !== 'string') throw optionError(name, 'an IP address or CIDR range as a string');
  try {
    new CidrSet([entry], option);
  } catch (error) {
    if (!isSluiceError(error, 'SLUICE_CONFIG')) throw error;
    throw new SluiceError('SLUICE_CONFIG', `${name}${reasonOf(error.message, `${option}[0]`)}`);
  }
}

/**
 * The parser's reason (" must be a CIDR without host bits set …") without the name it gave the
 * entry (its position in a list of one); a generic reason when the message has another shape.
 * The parser never quotes the entry.
 */
function reasonOf(message: string, parsedAs: string): string {
  return message.startsWith(`${parsedAs} must be `)
    ? message.slice(parsedAs.length)
    : ' must be an IP address or CIDR range';
}
