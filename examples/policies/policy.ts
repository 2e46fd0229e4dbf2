/**
 * The access policy of the example API, as data: who is never limited, who is never served, and
 * how much everyone else may ask. Lists are addresses and CIDR ranges; in a real service they
 * would come from configuration (a setup error names a bad entry by its position only).
 */
import { MemoryStore, createLimiter, tokenBucket, type Clock } from '../../src/index.js';

/** A network that abused the API: answered 403 before any limit is asked. */
export const denied: readonly string[] = ['203.0.113.0/24', '2001:db8:bad::/48'];

/** Monitoring and internal services: never limited, never charged. */
export const allowed: readonly string[] = ['10.0.0.0/8', 'fd00::/8'];

/**
 * The proxies in front of the app: here one on this machine, writing X-Forwarded-For. The key
 * and the lists read the client address with the same options, so they see the same client.
 */
export const proxies = { trustedProxies: ['127.0.0.0/8', '::1/128'] } as const;

/** Everyone else: 5 requests a minute per client address (IPv6 by /64). */
export function apiLimit(clock: Clock) {
  return createLimiter({
    name: 'api',
    rule: tokenBucket({ limit: 5, period: '1m' }),
    store: new MemoryStore(),
    clock,
  });
}
