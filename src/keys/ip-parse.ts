/**
 * Internal: allocation-free parsing of IP address text inside a larger string (a header value),
 * and canonical formatting.
 *
 * Why hand-written instead of ipaddr.js: `bench/keys/run.ts` measures `ipaddr.IPv4.parse` at about
 * 20× a bare `net.isIP` call and `ipaddr.IPv6.parse` at about 5×, and both need a substring per
 * entry first. A client address is resolved on every request, often over several
 * X-Forwarded-For entries, so this module scans character codes in place. Its correctness is
 * pinned by property tests on random input that compare its parsing with `node:net` and its
 * RFC 5952 text with ipaddr.js (`test/keys/properties.test.ts`). ipaddr.js stays the reference;
 * it is not needed at run time.
 *
 * The parsers are strict on purpose. IPv4 is four decimal parts without leading zeros:
 * `010.0.0.1` (octal in inet_aton) and `127.1` are refused rather than guessed, so no two texts
 * name one IPv4 address. IPv6 follows RFC 4291 §2.2 (with an optional IPv4 tail and zone id).
 */

/** Results of the last parse. One module-level scratch area: JavaScript runs one parse at a time. */
export const parsed = {
  /** The IPv4 address as an unsigned 32-bit number (also set for IPv4-mapped IPv6). */
  v4: 0,
  /** The eight 16-bit groups of the last IPv6 address. */
  v6: new Uint16Array(8),
  /** Start of the address text proper (after `[` or whitespace). */
  start: 0,
  /** End of the address text proper (before a zone id, `]`, a port or whitespace). */
  end: 0,
  /** After {@link parseIPv4Backwards}: the index of the comma before the entry, or -1. */
  comma: -1,
  /** True when the last address was written as dotted IPv4 (not as IPv6, mapped or not). */
  plainV4: false,
};

/**
 * The last text {@link parseEntry}'s caller found to be a plain, canonical IPv4 address. The
 * client-address step sets it and the key step compares with it, so that the address just
 * chosen is not parsed twice. Equal text is the same canonical address, so a match is exact.
 */
export const knownPlainV4 = { text: '' };

/** Family codes returned by the parsers: 0 when the text is not an address. */
export const NOT_IP = 0;
export const IPV4 = 4;
export const IPV6 = 6;

/** Longest entry considered at all: an IPv6 address with an IPv4 tail, a zone id and a port. */
const MAX_ENTRY_LENGTH = 100;

/** Parses strict dotted-quad IPv4 in `s[start, end)`; returns the address as uint32 or -1. */
export function parseIPv4(s: string, start: number, end: number): number {
  let value = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + part;
      dots++;
      digits = 0;
      part = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && part === 0) return -1; // leading zero
      part = part * 10 + (c - 48);
      if (part > 255) return -1;
      digits++;
    } else {
      return -1;
    }
  }
  if (digits === 0 || dots !== 3) return -1;
  return value * 256 + part;
}

/**
 * The fast path of a list-header walk: parses a plain IPv4 entry backwards from `end`, with
 * optional spaces or tabs around it, up to the comma before it (or the start). Walking from the
 * right, this touches each character once: finding the comma and parsing are one pass. Sets
 * `parsed` (`comma` too) and returns IPV4; NOT_IP means "not plain IPv4", and the caller falls
 * back to {@link parseEntry} (IPv6, ports, brackets, or garbage).
 */
export function parseIPv4Backwards(s: string, end: number): number {
  let i = end - 1;
  while (i >= 0 && isSpace(s.charCodeAt(i))) i--;
  const stop = i + 1;
  let value = 0;
  let scale = 1;
  let part = 0;
  let place = 1;
  let lead = 0;
  let digits = 0;
  let dots = 0;
  for (; i >= 0; i--) {
    const d = s.charCodeAt(i) - 48;
    if (d >= 0 && d <= 9) {
      if (digits === 3) return NOT_IP;
      part += d * place;
      place *= 10;
      lead = d;
      digits++;
      continue;
    }
    if (d !== -2) break; // not a dot: the end of the address text
    if (digits === 0 || part > 255 || (digits > 1 && lead === 0) || dots === 3) return NOT_IP;
    value += part * scale;
    scale *= 256;
    dots++;
    part = 0;
    place = 1;
    digits = 0;
  }
  if (digits === 0 || part > 255 || (digits > 1 && lead === 0) || dots !== 3) return NOT_IP;
  const start = i + 1;
  while (i >= 0 && isSpace(s.charCodeAt(i))) i--;
  if (i >= 0 && s.charCodeAt(i) !== 44) return NOT_IP;
  parsed.v4 = value + part * scale;
  parsed.plainV4 = true;
  parsed.start = start;
  parsed.end = stop;
  parsed.comma = i;
  return IPV4;
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/**
 * Parses IPv6 in `s[start, end)` (no brackets, no zone) into `out`; false when malformed.
 * Accepts one `::`, one to four hex digits per group, and an IPv4 tail in the last 32 bits.
 */
export function parseIPv6(s: string, start: number, end: number, out: Uint16Array): boolean {
  let groups = 0; // groups written so far
  let gap = -1; // index in `out` where `::` stands
  let i = start;
  if (end - start < 2) return false;
  if (s.charCodeAt(i) === 58) {
    if (s.charCodeAt(i + 1) !== 58) return false;
    gap = 0;
    i += 2;
    if (i === end) {
      out.fill(0);
      return true;
    }
  }
  while (i < end) {
    if (groups === 8) return false;
    const groupStart = i;
    let value = 0;
    while (i < end && i - groupStart < 5) {
      const h = hexValue(s.charCodeAt(i));
      if (h < 0) break;
      value = value * 16 + h;
      i++;
    }
    const length = i - groupStart;
    if (i < end && s.charCodeAt(i) === 46) {
      // An IPv4 tail: only as the last 32 bits, and only where two groups are left.
      if (groups > 6) return false;
      const v4 = parseIPv4(s, groupStart, end);
      if (v4 < 0) return false;
      out[groups++] = v4 >>> 16;
      out[groups++] = v4 & 0xffff;
      i = end;
      break;
    }
    if (length === 0 || length > 4) return false;
    out[groups++] = value;
    if (i === end) break;
    if (s.charCodeAt(i) !== 58) return false;
    i++;
    if (i < end && s.charCodeAt(i) === 58) {
      if (gap >= 0) return false;
      gap = groups;
      i++;
    } else if (i === end) {
      return false; // a trailing single colon
    }
  }
  if (gap < 0) return groups === 8;
  if (groups === 8) return false; // `::` must stand for at least one group (RFC 4291 §2.2)
  const moved = groups - gap;
  for (let k = 0; k < moved; k++) out[7 - k] = out[groups - 1 - k] as number;
  for (let k = gap; k < 8 - moved; k++) out[k] = 0;
  return true;
}

/** True when `v6` is an IPv4-mapped address (::ffff:0:0/96); stores the IPv4 part in `parsed.v4`. */
function mappedToV4(v6: Uint16Array): boolean {
  if (v6[0] !== 0 || v6[1] !== 0 || v6[2] !== 0 || v6[3] !== 0 || v6[4] !== 0 || v6[5] !== 0xffff)
    return false;
  parsed.v4 = (v6[6] as number) * 65536 + (v6[7] as number);
  return true;
}

function isZoneChar(c: number): boolean {
  // RFC 6874 unreserved characters: ALPHA / DIGIT / "-" / "." / "_" / "~"
  return (
    (c >= 48 && c <= 57) ||
    (c >= 65 && c <= 90) ||
    (c >= 97 && c <= 122) ||
    c === 45 ||
    c === 46 ||
    c === 95 ||
    c === 126
  );
}

/**
 * Parses a bare address in `s[start, end)`: IPv4, or IPv6 with an optional `%zone` (dropped).
 * IPv4-mapped IPv6 is reported as IPv4. Sets `parsed` and returns IPV4, IPV6 or NOT_IP.
 */
export function parseIp(s: string, start: number, end: number): number {
  if (end - start > MAX_ENTRY_LENGTH) return NOT_IP;
  parsed.start = start;
  parsed.end = end;
  const v4 = parseIPv4(s, start, end);
  if (v4 >= 0) {
    parsed.v4 = v4;
    parsed.plainV4 = true;
    return IPV4;
  }
  let stop = end;
  for (let i = start; i < end; i++) {
    if (s.charCodeAt(i) === 37) {
      if (i + 1 === end) return NOT_IP;
      for (let k = i + 1; k < end; k++) if (!isZoneChar(s.charCodeAt(k))) return NOT_IP;
      stop = i;
      break;
    }
  }
  if (!parseIPv6(s, start, stop, parsed.v6)) return NOT_IP;
  parsed.end = stop;
  parsed.plainV4 = false;
  return mappedToV4(parsed.v6) ? IPV4 : IPV6;
}

function isPort(s: string, start: number, end: number): boolean {
  const length = end - start;
  if (length < 1 || length > 5) return false;
  let port = 0;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
    port = port * 10 + (c - 48);
  }
  return port <= 65535;
}

/** `s.indexOf` bounded to `[from, end)`, so that a long header is never scanned past the entry. */
function indexIn(s: string, code: number, from: number, end: number): number {
  for (let i = from; i < end; i++) if (s.charCodeAt(i) === code) return i;
  return -1;
}

/** True for the optional whitespace of HTTP (space, tab). */
export function isSpace(c: number): boolean {
  return c === 32 || c === 9;
}

/**
 * Parses one proxy-header entry in `s[start, end)`: optional surrounding spaces or tabs, then an
 * address, `ipv4:port`, `[ipv6]` or `[ipv6]:port` (some load balancers append ports). Anything
 * else (an empty entry, `unknown`, a host name, inner spaces) is NOT_IP.
 */
export function parseEntry(s: string, start: number, end: number): number {
  while (start < end && isSpace(s.charCodeAt(start))) start++;
  while (end > start && isSpace(s.charCodeAt(end - 1))) end--;
  if (start === end || end - start > MAX_ENTRY_LENGTH) return NOT_IP;
  if (s.charCodeAt(start) === 91) {
    const close = indexIn(s, 93, start, end);
    if (close < 0) return NOT_IP;
    if (close + 1 < end && (s.charCodeAt(close + 1) !== 58 || !isPort(s, close + 2, end))) return NOT_IP;
    // Brackets hold IPv6 text only; `[1.2.3.4]` is not a spelling anyone writes.
    if (indexIn(s, 58, start + 1, close) < 0) return NOT_IP;
    return parseIp(s, start + 1, close);
  }
  const colon = indexIn(s, 58, start, end);
  if (colon >= 0 && indexIn(s, 58, colon + 1, end) < 0) {
    // Exactly one colon: `ipv4:port`. (Any IPv6 text has at least two colons.)
    if (!isPort(s, colon + 1, end)) return NOT_IP;
    const v4 = parseIPv4(s, start, colon);
    if (v4 < 0) return NOT_IP;
    parsed.v4 = v4;
    parsed.plainV4 = true;
    parsed.start = start;
    parsed.end = colon;
    return IPV4;
  }
  return parseIp(s, start, end);
}

/** Formats a uint32 as dotted-quad IPv4. */
export function formatIPv4(v4: number): string {
  return `${v4 >>> 24}.${(v4 >>> 16) & 255}.${(v4 >>> 8) & 255}.${v4 & 255}`;
}

/**
 * Formats eight groups as RFC 5952 text: lower case, no leading zeros, the longest run of two or
 * more zero groups (the first one on a tie) written as `::`.
 */
export function formatIPv6(v6: Uint16Array): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (v6[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && v6[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  let text = '';
  for (let i = 0; i < 8; i++) {
    if (i === bestStart) {
      text += '::';
      i += bestLength - 1;
      continue;
    }
    if (i > 0 && i !== bestStart + bestLength) text += ':';
    text += (v6[i] as number).toString(16);
  }
  return text;
}
