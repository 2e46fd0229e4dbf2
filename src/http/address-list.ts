/**
 * The `allow` and `deny` lists of a route limit: addresses and CIDR ranges compiled once by the
 * keys layer's CIDR parser (one parser for trusted proxies and for these lists, so that both
 * read `::ffff:10.0.0.0/104` and `10.0.0.0/8` as the same range), matched without allocation.
 */
import { SluiceError, isSluiceError, optionError } from '../core/errors.js';
import { CidrSet } from '../keys/cidr-set.js';
import { NOT_IP, parseIp } from '../keys/ip-parse.js';

/**
 * Internal: a compiled allow or deny list. Setup errors name the option and the entry's
 * position, never the entry: lists are often read from configuration files or environment
 * variables, and an error message must not carry what they hold.
 */
export class AddressList {
  private readonly ranges: CidrSet;

  /** @param option the option's name in error messages, e.g. `rateLimit deny` */
  constructor(entries: unknown, option: string) {
    if (!Array.isArray(entries)) throw optionError(option, 'an array of IP addresses and CIDR ranges');
    for (let i = 0; i < entries.length; i++) checkEntry(entries[i], option, i);
    this.ranges = new CidrSet(entries as string[], option);
  }

  /**
   * True when `address` (a client address as text, without port or brackets) lies in the list.
   * No address, or text that is not an IP address, is on no list: the guard cannot tell whose
   * it is, so neither list applies and the request goes on to skip and the key.
   */
  has(address: string | undefined): boolean {
    if (typeof address !== 'string') return false;
    const family = parseIp(address, 0, address.length);
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
