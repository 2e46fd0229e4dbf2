import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { HttpResponse } from '../../http/problem.js';
import type { ScopeName, TokenModel } from '../policy/model.js';
import { ipKey } from '../../keys/ip-prefix.js';
import { AuthThrottle } from './auth-throttle.js';
import { problem } from './http-io.js';

/**
 * Bearer tokens of the policy: a request to the API carries one holding the route's scope
 * (decide for decisions and peek, admin for reset and forget). Tokens are compared by their
 * SHA-256 in constant time, so that the comparison says nothing of how much of a guess matched.
 * Without tokens every request is let through: the server then listens on loopback only.
 */
export function authorizer(
  tokens: readonly TokenModel[],
  throttle: AuthThrottle = new AuthThrottle(),
): (req: IncomingMessage, scope: ScopeName) => HttpResponse | undefined {
  const known = tokens.map((t) => ({ digest: digest(t.token), scopes: new Set(t.scopes) }));
  return (req, scope) => {
    if (known.length === 0) return undefined;
    const peer = peerOf(req);
    const waitMs = throttle.waitMs(peer);
    if (waitMs > 0) return tooManyFailures(waitMs);
    const header = req.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer +(\S+) *$/i.exec(header) : null;
    const offered = match === null ? undefined : digest(match[1]!);
    const holder = offered === undefined ? undefined : known.find((k) => timingSafeEqual(k.digest, offered));
    if (holder === undefined) {
      throttle.failed(peer);
      const response = problem(401, 'unauthorized', 'Unauthorized', 'Send a bearer token of the policy.');
      response.headers['WWW-Authenticate'] = 'Bearer';
      return response;
    }
    if (!holder.scopes.has(scope))
      return problem(403, 'insufficient_scope', 'Forbidden', `This token does not hold the ${scope} scope.`);
    return undefined;
  };
}

/**
 * The peer as TCP sees it (a guesser chooses its headers, not its address), keyed as the
 * library keys clients: an IPv6 peer by its /64, which one subscriber holds whole, so that
 * rotating through it does not buy fresh tries.
 */
export function peerOf(req: IncomingMessage): string {
  try {
    return ipKey(req.socket.remoteAddress);
  } catch {
    return '';
  }
}

/** The answer to a peer that failed authentication too often: 429, with when it may try again. */
export function tooManyFailures(waitMs: number): HttpResponse {
  const response = problem(
    429,
    'too_many_failed_attempts',
    'Too Many Requests',
    'Too many requests from this address failed authentication; try again after Retry-After seconds.',
  );
  response.headers['Retry-After'] = String(Math.ceil(waitMs / 1000));
  return response;
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** True for a host name or address that only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}
