/**
 * A small API on plain node:http with one route limit that shows the three ways past (or not
 * past) it: `deny` (403), `allow` (untouched) and `skip` (here: partners whose key is looked up
 * asynchronously). Each decision of the guard is counted from its events channel and served on
 * `GET /internal/decisions`.
 */
import { createServer } from 'node:http';
import { rateLimit } from '../../src/adapters/node/index.js';
import {
  DecisionEvents,
  clientAddress,
  ipKey,
  systemClock,
  type Clock,
  type DecisionOutcome,
} from '../../src/index.js';
import { sendJson } from '../shared/http.js';
import { allowed, apiLimit, denied, proxies } from './policy.js';

export interface PoliciesOptions {
  /** Inject a manual clock in tests. @default Date.now */
  clock?: Clock;
  /** Partner keys whose requests skip the limit (a database in a real service). */
  partnerKeys?: ReadonlySet<string>;
}

export function createApp(options: PoliciesOptions = {}) {
  const { clock = systemClock, partnerKeys = new Set<string>() } = options;
  const api = apiLimit(clock);
  const events = new DecisionEvents();
  const decisions: Partial<Record<DecisionOutcome, number>> = {};
  events.subscribe((event) => {
    decisions[event.outcome] = (decisions[event.outcome] ?? 0) + 1;
  });
  // The limiter reports its own outcomes (admitted, refused) to its own channel.
  api.events.subscribe((event) => {
    decisions[event.outcome] = (decisions[event.outcome] ?? 0) + 1;
  });

  /** As a database lookup would be: asynchronous. A failing lookup limits the request. */
  async function isPartner(key: unknown): Promise<boolean> {
    await Promise.resolve();
    return typeof key === 'string' && partnerKeys.has(key);
  }

  const limit = rateLimit({
    limits: api,
    key: (request) => ipKey(clientAddress(request, proxies).address),
    proxies,
    deny: denied,
    allow: allowed,
    skip: (request) => isPartner(request.headers['x-partner-key']),
    events,
  });

  const server = createServer(async (request, response) => {
    if (!(await limit(request, response))) return; // 403, 429 or a problem was sent
    const path = (request.url ?? '/').split('?')[0];
    if (request.method === 'GET' && path === '/api/quote')
      return sendJson(response, 200, { quote: 'Festina lente' });
    if (request.method === 'GET' && path === '/internal/decisions') return sendJson(response, 200, decisions);
    sendJson(response, 404, { error: 'not_found' });
  });
  return { server, api };
}
