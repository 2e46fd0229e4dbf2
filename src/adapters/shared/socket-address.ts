/**
 * The default client address of the adapters that see a peer (node, Express, Fastify from the
 * socket; fetch from the address the server hands over): what `clientAddress` finds with the
 * route's `proxies`, so that `allow` and `deny` lists work behind proxies exactly as an
 * `ipKey(clientAddress(req, proxies).address)` key does.
 */
import { optionError } from '../../core/errors.js';
import type { RateLimitOptions } from '../../http/guard.js';
import { AddressList } from '../../http/address-list.js';
import { expandQuick, isQuick, type RateLimitInput } from '../../http/quick-options.js';
import {
  createClientAddress,
  type ClientAddressInput,
  type ClientAddressOptions,
} from '../../keys/client-address.js';

/**
 * The options as the guard takes them: `proxies` read here and replaced by an `address`
 * function, unless the application gave its own `address` (then `proxies` is a mistake). The
 * one-line form (`{ limit, window }`) is expanded first, keyed by that same client address.
 *
 * @example
 * createGuard(withSocketAddress(options, (req) => req)) // node:http and Express
 * createGuard(withSocketAddress(options, (req) => req.raw)) // Fastify
 * createGuard(withSocketAddress(options, (request) => ({ request, peer: peerOf(request) }))) // fetch
 */
export function withSocketAddress<Request>(
  input: RateLimitInput<Request>,
  inputOf: (request: Request) => ClientAddressInput,
): RateLimitOptions<Request> {
  if (typeof input !== 'object' || input === null) return input; // the guard says why
  let options = input as RateLimitOptions<Request>;
  if (isQuick(input)) {
    const resolve = input.address === undefined ? compile(input.proxies ?? {}) : undefined;
    options = expandQuick(input, resolve && ((request) => resolve(inputOf(request)).address));
  }
  const { proxies, ...rest } = options;
  if (rest.address !== undefined) {
    if (proxies !== undefined)
      throw optionError('rateLimit proxies', 'left out when address is given (address decides alone)');
    return options;
  }
  if (rest.allow === undefined && rest.deny === undefined) {
    if (proxies !== undefined) compile(proxies); // still checked at setup
    return rest;
  }
  const resolve = compile(proxies ?? {});
  return { ...rest, address: (request) => resolve(inputOf(request)).address };
}

/**
 * Compiles the client-address options. The trusted proxies are read as a list first, so that a
 * bad entry is named by its position and never quoted.
 */
function compile(proxies: ClientAddressOptions) {
  if (typeof proxies === 'object' && proxies !== null && proxies.trustedProxies !== undefined)
    new AddressList(proxies.trustedProxies, 'rateLimit proxies.trustedProxies', 'exact');
  return createClientAddress(proxies);
}
