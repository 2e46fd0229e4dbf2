import { optionError } from '../core/errors.js';
import { checkOptionKeys } from '../core/options.js';
import { compiledPerOptions } from './compiled.js';
import { CidrSet, LOOPBACK } from './cidr-set.js';
import { UNREADABLE, forwardedElement, previousElement } from './forwarded.js';
import { REPEATED, readHeader, type HeadersLike } from './headers.js';
import { NOT_IP, knownPlainV4, parseEntry, parseIPv4Backwards, parseIp, parsed } from './ip-parse.js';

/** The header a trusted proxy writes the client address into. */
export type ProxyHeader = 'x-forwarded-for' | 'x-real-ip' | 'forwarded';

/**
 * How the address was decided, for debugging and docs:
 * - `socket`: the peer is a trusted proxy but sent no proxy header (a health check, a local call);
 * - `x-real-ip` / `x-forwarded-for` / `forwarded`: read from that header of a trusted peer;
 * - `untrusted-peer`: the peer is not a trusted proxy, so no header was read at all;
 * - `malformed-header`: the header was present but unusable; the address is the nearest one
 *   that a trusted party vouched for (the peer, or the last trusted entry).
 */
export type ClientAddressSource =
  'socket' | 'x-real-ip' | 'x-forwarded-for' | 'forwarded' | 'untrusted-peer' | 'malformed-header';

/** Options of {@link createClientAddress} and {@link clientAddress}. */
export interface ClientAddressOptions {
  /**
   * Addresses and CIDR ranges (IPv4 and IPv6) of your own proxies, or the named ranges Express
   * uses: `loopback`, `linklocal` (169.254.0.0/16, fe80::/10) and `uniquelocal` (10.0.0.0/8,
   * 172.16.0.0/12, 192.168.0.0/16, fc00::/7). Only a connection from one
   * of these has its proxy header read; in X-Forwarded-For and Forwarded, entries in this set are
   * walked past from the right. Never put a range here that clients can connect from.
   * @default LOOPBACK — 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104 (a proxy on the same machine,
   * whichever address family it connects with)
   */
  trustedProxies?: readonly string[];
  /**
   * Which header a trusted proxy writes: nginx `X-Real-IP $remote_addr`, the usual appended
   * `X-Forwarded-For`, or RFC 7239 `Forwarded: for=…`.
   * @default 'x-forwarded-for'
   */
  header?: ProxyHeader;
  /**
   * For X-Forwarded-For and Forwarded: take the entry this many places from the right instead
   * of walking past trusted proxies (1 = the entry the peer appended). For a chain whose
   * addresses are unknown, e.g. a cloud load balancer; the peer itself must still be trusted.
   * @default undefined — walk from the right past `trustedProxies`
   */
  hops?: number;
  /**
   * Trust a peer on a Unix socket as one of your proxies (nginx `proxy_pass http://unix:…`). Such
   * a peer has no address, so `trustedProxies` can never match it: without this option its
   * header is not read and every client would share one key. Set it only when the app listens on
   * nothing but its Unix socket, where only local processes allowed by the file's permissions
   * can connect. A Node socket counts as Unix when it is open and has neither a remote nor a local
   * address (a TCP socket that has lost its address is not taken for one); in the `{ peer }`
   * forms an absent or empty peer counts as Unix.
   * @default false
   */
  trustUnixSocket?: boolean;
}

/** What {@link clientAddress} found. */
export interface ClientAddressResult {
  /** The client address text (no port, no brackets), or undefined when the socket has none. */
  address: string | undefined;
  /** How it was decided. */
  source: ClientAddressSource;
}

/**
 * A request to find the client address of: a Node `IncomingMessage`, a Fetch `Request` with the
 * peer address your server gives you, or a plain `{ peer, headers }`.
 */
export type ClientAddressInput =
  | {
      socket:
        | { remoteAddress?: string | undefined; localAddress?: string | undefined; destroyed?: boolean }
        | null
        | undefined;
      headers: HeadersLike;
    }
  | { request: { headers: HeadersLike }; peer: string | undefined }
  | { peer: string | undefined; headers: HeadersLike };

/** A compiled client-address function; see {@link createClientAddress}. */
export type ClientAddressFunction = (input: ClientAddressInput) => ClientAddressResult;

const optionKeys = ['trustedProxies', 'header', 'hops', 'trustUnixSocket'] as const;
const headers: readonly ProxyHeader[] = ['x-forwarded-for', 'x-real-ip', 'forwarded'];
/**
 * No real chain has this many proxies. The cap bounds the work per request when a client on a
 * trusted network sends 1,000 trusted-looking entries.
 */
const MAX_WALK = 32;

const STOP = 1;
const MALFORMED = -1;

class ClientAddressResolver {
  private readonly trusted: CidrSet;
  private readonly header: ProxyHeader;
  private readonly hops: number;
  private readonly isList: boolean;
  private readonly trustUnixSocket: boolean;
  /** The last entry a trusted party vouched for during the current walk (indices into it). */
  private goodText: string | undefined = undefined;
  /**
   * The last peer text found trusted; equal text is the same decision. It starts unset, never as
   * a string: any text it starts as would be trusted without a check.
   */
  private trustedPeer: string | undefined = undefined;
  private goodStart = 0;
  private goodEnd = 0;

  constructor(options: ClientAddressOptions) {
    checkOptionKeys('clientAddress', options, optionKeys);
    const { trustedProxies = LOOPBACK, header = 'x-forwarded-for', hops, trustUnixSocket = false } = options;
    this.trusted = new CidrSet(trustedProxies, 'clientAddress trustedProxies');
    if (!headers.includes(header)) throw optionError('clientAddress header', `one of ${headers.join(', ')}`);
    if (hops !== undefined) {
      if (header === 'x-real-ip')
        throw optionError('clientAddress hops', 'unset with header x-real-ip (one value)');
      if (!Number.isSafeInteger(hops) || hops < 1 || hops > MAX_WALK)
        throw optionError('clientAddress hops', `a whole number from 1 to ${MAX_WALK}`);
    }
    if (typeof trustUnixSocket !== 'boolean')
      throw optionError('clientAddress trustUnixSocket', 'true or false');
    this.trustUnixSocket = trustUnixSocket;
    this.header = header;
    this.hops = hops ?? 0;
    this.isList = header !== 'x-real-ip';
  }

  resolve(input: ClientAddressInput): ClientAddressResult {
    const request = input as {
      socket?: { remoteAddress?: unknown; localAddress?: unknown; destroyed?: unknown } | null;
      request?: { headers?: HeadersLike } | null;
      peer?: unknown;
      headers?: HeadersLike;
    };
    let peer: string | undefined;
    let headerSet: HeadersLike | undefined;
    if (request.socket !== undefined) {
      peer = request.socket === null ? undefined : textOf(request.socket.remoteAddress);
      headerSet = request.headers;
    } else {
      peer = textOf(request.peer);
      headerSet = request.request != null ? request.request.headers : request.headers;
    }
    if (peer === undefined) {
      // No address text (a closed socket, a runtime that gives none) is no proxy of ours,
      // unless it is a Unix socket and the application said to trust those.
      if (!this.trustUnixSocket || !isUnixSocket(request))
        return { address: undefined, source: 'untrusted-peer' };
    } else if (peer !== this.trustedPeer) {
      // The header is read only when the connection itself comes from a trusted proxy.
      // A keep-alive connection asks again with the same peer text: remember the last trusted one.
      const peerFamily = parseIp(peer, 0, peer.length);
      if (peerFamily === NOT_IP || !this.trusted.hasParsed(peerFamily))
        return { address: peer, source: 'untrusted-peer' };
      this.trustedPeer = peer;
    }
    const value = readHeader(headerSet, this.header, this.isList);
    if (value === undefined) return { address: peer, source: 'socket' };
    if (value === REPEATED) return { address: peer, source: 'malformed-header' };
    this.goodText = undefined;
    if (this.header === 'x-forwarded-for') return this.walkForwardedFor(value, peer);
    if (this.header === 'forwarded') return this.walkForwarded(value, peer);
    if (parseEntry(value, 0, value.length) === NOT_IP) return { address: peer, source: 'malformed-header' };
    return { address: chosen(value), source: 'x-real-ip' };
  }

  /**
   * X-Forwarded-For is walked from the right. Its left entries are whatever the client
   * wrote; only the entries appended by proxies we trust are facts. The first entry that is not
   * a trusted proxy (or the entry `hops` places in) is the client.
   */
  private walkForwardedFor(value: string, peer: string | undefined): ClientAddressResult {
    let end = value.length;
    for (let walked = 1; ; walked++) {
      let family = parseIPv4Backwards(value, end);
      let comma = parsed.comma;
      if (family === NOT_IP) {
        comma = end === 0 ? -1 : value.lastIndexOf(',', end - 1);
        family = parseEntry(value, comma + 1, end);
      }
      const step = this.visit(family, value, comma + 1, end, walked);
      if (step === STOP) return { address: chosen(value), source: 'x-forwarded-for' };
      if (step === MALFORMED || comma < 0) return this.endOfWalk(step, peer, 'x-forwarded-for');
      end = comma;
    }
  }

  /**
   * The same walk over the `for=` values of RFC 7239 Forwarded, one element at a time from the
   * right: an element left of the decided one is never parsed, so nothing the client wrote
   * there, not even a syntax error, can change its key.
   */
  private walkForwarded(value: string, peer: string | undefined): ClientAddressResult {
    let end = value.length;
    for (let walked = 1; ; walked++) {
      const comma = previousElement(value, end);
      const start = forwardedElement.forStart;
      const stop = forwardedElement.forEnd;
      const step =
        comma === UNREADABLE || start < 0
          ? MALFORMED
          : this.visit(parseEntry(value, start, stop), value, start, stop, walked);
      if (step === STOP) return { address: chosen(value), source: 'forwarded' };
      if (step === MALFORMED || comma < 0) return this.endOfWalk(step, peer, 'forwarded');
      end = comma;
    }
  }

  /**
   * Decides on one parsed entry (`family` from the parser): STOP when it is the client,
   * MALFORMED, or 0 to walk on past it (then the entry is remembered as the last one a trusted
   * party vouched for).
   */
  private visit(family: number, value: string, start: number, end: number, walked: number): number {
    if (family === NOT_IP || walked > MAX_WALK) return MALFORMED;
    if (this.hops > 0 ? walked === this.hops : !this.trusted.hasParsed(family)) return STOP;
    this.vouched(value, start, end);
    return 0;
  }

  private vouched(value: string, start: number, end: number): void {
    this.goodText = value;
    this.goodStart = start;
    this.goodEnd = end;
  }

  /**
   * The walk ended without a client entry. Every entry was a trusted proxy: the leftmost is the
   * client (a request from inside). Otherwise (a malformed entry, fewer entries than `hops`) the
   * bad part is ignored and the nearest address a trusted party vouched for is used.
   */
  private endOfWalk(
    step: number,
    peer: string | undefined,
    source: ClientAddressSource,
  ): ClientAddressResult {
    const text = this.goodText;
    this.goodText = undefined;
    // The entry parsed before (it was vouched for); parse it again for its address range.
    const address =
      text === undefined || parseEntry(text, this.goodStart, this.goodEnd) === NOT_IP
        ? peer
        : slice(text, parsed.start, parsed.end);
    const clean = step !== MALFORMED && this.hops === 0;
    return { address, source: clean ? source : 'malformed-header' };
  }
}

/** A peer's address text; anything else, the empty string included, is no address. */
function textOf(peer: unknown): string | undefined {
  return typeof peer === 'string' && peer.length > 0 ? peer : undefined;
}

/**
 * True for a peer without an address that is a Unix socket. A Node socket on a Unix path has
 * neither a remote nor a local address; a TCP socket always has a local one while it is open.
 * A closed socket has neither, so it must be open. The `{ peer }` forms (no socket) say nothing
 * more than "no address": the option's promise, that the app listens on nothing else, decides.
 */
function isUnixSocket(request: { socket?: { localAddress?: unknown; destroyed?: unknown } | null }): boolean {
  if (!('socket' in request)) return true;
  const socket = request.socket;
  return (
    typeof socket === 'object' &&
    socket !== null &&
    socket.destroyed !== true &&
    textOf(socket.localAddress) === undefined
  );
}

/** The address text of the entry just parsed; a plain IPv4 one is noted for the key step. */
function chosen(value: string): string {
  const address = slice(value, parsed.start, parsed.end);
  if (parsed.plainV4) knownPlainV4.text = address;
  return address;
}

function slice(text: string, start: number, end: number): string {
  return start === 0 && end === text.length ? text : text.slice(start, end);
}

/**
 * Compiles the trusted-proxy set once and returns a function that finds a request's client
 * address: the proxy header is read only from a trusted peer and walked from the right. The hot
 * path allocates only its result: no regex, no split, no closure.
 * Bad header bytes never throw and are never trusted; the result says why (`source`).
 *
 * @default options `{ trustedProxies: LOOPBACK, header: 'x-forwarded-for' }`
 * @example
 * const addressOf = createClientAddress({ trustedProxies: ['10.0.0.0/8'], header: 'x-forwarded-for' });
 * const { address, source } = addressOf(req); // req: IncomingMessage
 * const key = ipKey(address); // 203.0.113.7, or 2001:db8:1:2::/64
 */
export function createClientAddress(options: ClientAddressOptions = {}): ClientAddressFunction {
  const resolver = new ClientAddressResolver(options);
  return (input) => resolver.resolve(input);
}

const compiledFor = compiledPerOptions(createClientAddress);

/**
 * The convenience form of {@link createClientAddress}: compiles `options` on first use and
 * reuses the compiled form for the same options object. Keep the options in a constant.
 *
 * @default options `{ trustedProxies: LOOPBACK, header: 'x-forwarded-for' }`
 * @example
 * const proxies = { trustedProxies: ['127.0.0.1/32'], header: 'x-real-ip' } as const;
 * clientAddress({ peer: '127.0.0.1', headers: { 'x-real-ip': '203.0.113.7' } }, proxies);
 * // { address: '203.0.113.7', source: 'x-real-ip' }
 */
export function clientAddress(
  input: ClientAddressInput,
  options?: ClientAddressOptions,
): ClientAddressResult {
  return compiledFor(options)(input);
}
