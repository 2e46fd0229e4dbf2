/**
 * What the suite expects, written out exactly: the headers it compares, a reply reduced to them,
 * and the bodies of the problem responses every adapter sends alike.
 */
import type { HttpReply } from './harness.js';

/** The headers the suite compares; everything else is the framework's business. */
export const RELEVANT = [
  'retry-after',
  'cache-control',
  'content-type',
  'ratelimit-policy',
  'ratelimit',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'access-control-expose-headers',
  'x-auth-mode',
];

export interface Snapshot {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** Status, relevant headers and parsed body. A 200's Content-Type is the handler's, not ours. */
export function snapshot(reply: HttpReply): Snapshot {
  const headers: Record<string, string> = {};
  for (const name of RELEVANT) {
    if (name === 'content-type' && reply.status < 300) continue;
    const value = reply.headers[name];
    if (value !== undefined) headers[name] = value;
  }
  let body: unknown = reply.body;
  try {
    body = JSON.parse(reply.body);
  } catch {
    // A handler's plain text stays text.
  }
  return { status: reply.status, headers, body };
}

export const OK = { ok: true };
export const PROBLEM = 'application/problem+json';
export const DRAFT_EXPOSE = 'Retry-After, RateLimit, RateLimit-Policy';
export const LEGACY_EXPOSE = 'Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset';

export function problem429(retryAfter: number, limits: string[]) {
  return {
    type: 'about:blank',
    title: 'Too Many Requests',
    status: 429,
    detail: `Too many requests. Retry after ${retryAfter} seconds.`,
    code: 'rate_limited',
    limits,
  };
}

export const errorBodies = {
  400: ['Bad Request', 'The request carries a value that cannot identify a client.', 'invalid_request'],
  401: ['Unauthorized', 'The offered credential was refused.', 'unauthorized'],
  500: ['Internal Server Error', 'An internal error occurred.', 'internal_error'],
  503: ['Service Unavailable', 'Rate limiting is unavailable; try again later.', 'rate_limit_unavailable'],
} as const;

export const DENIED = {
  type: 'about:blank',
  title: 'Forbidden',
  status: 403,
  detail: 'Requests from this client are not accepted.',
  code: 'denied',
};

export function problemError(status: keyof typeof errorBodies): Snapshot {
  const [title, detail, code] = errorBodies[status];
  return {
    status,
    headers: { 'content-type': PROBLEM, 'cache-control': 'no-store' },
    body: { type: 'about:blank', title, status, detail, code },
  };
}
