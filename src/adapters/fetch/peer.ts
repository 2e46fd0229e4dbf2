/**
 * The peer address of a Fetch `Request`: a `Request` carries no socket, so the server that
 * received it says who connected, each in its own shape. The address is remembered per request
 * (fetch-state.ts), so that the key function (through {@link clientAddressOf}) and the `allow`
 * and `deny` lists read the same one.
 */
import type { RateLimitOptions } from '../../http/guard.js';
import type { RateLimitInput } from '../../http/quick-options.js';
import {
  createClientAddress,
  type ClientAddressFunction,
  type ClientAddressOptions,
} from '../../keys/client-address.js';
import { ensureState, stateOf } from './state.js';
import { withSocketAddress } from '../shared/socket-address.js';

/**
 * Who connected, as a server hands it over: `{ address }` (the text of the peer's IP address),
 * Deno's handler `info` (`{ remoteAddr: { hostname } }`), or Bun's `server`
 * (`server.requestIP(request)`). Behind Cloudflare, pass
 * `{ address: request.headers.get('cf-connecting-ip') ?? undefined }`: Cloudflare sets it.
 *
 * @default no peer: the client address is unknown, on neither list
 * @example
 * const info: PeerInfo = { address: '203.0.113.7' };
 */
export type PeerInfo =
  | { readonly address?: string | null | undefined }
  | { readonly remoteAddr: { readonly hostname?: string } }
  | { requestIP(request: Request): { readonly address: string } | null | undefined };

/**
 * Remembers what `info` says about the peer of `request`, to be read when the key or a list asks
 * ({@link peerAddress}): a limit keyed by a user never pays for the address (Bun's
 * `server.requestIP` is a call into the server). A later call without `info`, or with one that
 * names no address, keeps the address found before.
 */
export function recordPeer(request: Request, info: PeerInfo | undefined): void {
  if (typeof info !== 'object' || info === null) return;
  const state = ensureState(request);
  // The same server object for a second limit says nothing new.
  if (info === state.peerInfo) return;
  // Another one: the address the first names stays the fallback.
  if (state.peerInfo !== undefined) peerAddress(request);
  state.peerInfo = info;
  state.peerRead = false;
}

/** The peer address of a request whose server handed one over (see {@link recordPeer}). */
function peerAddress(request: Request): string | undefined {
  const state = stateOf(request);
  if (state === undefined) return undefined;
  if (!state.peerRead && state.peerInfo !== undefined) {
    state.peerRead = true;
    const address = peerOf(request, state.peerInfo);
    if (address !== undefined) state.peer = address;
  }
  return state.peer;
}

/** The address text `info` names, whatever its shape; undefined for anything else. Never throws. */
function peerOf(request: Request, info: unknown): string | undefined {
  if (typeof info !== 'object' || info === null) return undefined;
  try {
    const given = info as {
      address?: unknown;
      remoteAddr?: { hostname?: unknown };
      requestIP?: (request: Request) => { address?: unknown } | null | undefined;
    };
    if (typeof given.address === 'string') return given.address;
    if (typeof given.remoteAddr === 'object' && given.remoteAddr !== null) {
      const hostname = given.remoteAddr.hostname;
      return typeof hostname === 'string' ? hostname : undefined;
    }
    if (typeof given.requestIP === 'function') {
      const address = given.requestIP(request)?.address;
      return typeof address === 'string' ? address : undefined;
    }
  } catch {
    // A server object that throws when asked knows no peer: the address stays unknown.
  }
  return undefined;
}

/** The guard's options with the default `address`: the peer behind the route's `proxies`. */
export function withPeerAddress(options: RateLimitInput<Request>): RateLimitOptions<Request> {
  return withSocketAddress(options, (request) => ({ request, peer: peerAddress(request) }));
}

const loopbackOnly = createClientAddress();
const compiled = new WeakMap<ClientAddressOptions, ClientAddressFunction>();

/**
 * The client address of a request a sluice/fetch limit has seen: the peer address its server
 * handed over, or behind trusted `proxies` the address they forwarded (see `clientAddress`).
 * Pass the same `proxies` as the limit's, as one object created once.
 *
 * @default proxies trust loopback only, reading X-Forwarded-For
 * @example
 * rateLimit({ limits: perIp, key: (request) => ipKey(clientAddressOf(request)) });
 */
export function clientAddressOf(request: Request, proxies?: ClientAddressOptions): string | undefined {
  let resolve = loopbackOnly;
  if (proxies !== undefined) {
    resolve = compiled.get(proxies) ?? createClientAddress(proxies);
    compiled.set(proxies, resolve);
  }
  return resolve({ request, peer: peerAddress(request) }).address;
}
