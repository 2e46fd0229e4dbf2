/** The policy rules and the traffic the dashboard's tests send, and what the dashboard must show of it. */
import type { Snapshot } from '../../../src/server/dashboard/snapshot-types.js';
import { fromAddress, type RunningSluice } from '../serve-support.js';
import { totalOf } from './sse-support.js';

export const OFFENDER = '203.0.113.7';
export const OTHER = '198.51.100.4';
export const SHADOWED = '203.0.113.9';
export const NICK = 'ann-the-nick';

/** login: 3 an hour per address; search: 2 an hour per address and nick, in shadow mode. */
export const RULES = `rules:
  - name: login
    match: { methods: [POST], paths: [/api/login] }
    key: [address]
    algorithm: fixed-window
    limit: 3
    window: 1h
  - name: search
    match: { paths: [/api/search] }
    key: [address, header:x-nick]
    algorithm: fixed-window
    limit: 2
    window: 1h
    mode: shadow
`;

/** 5 logins from OFFENDER (3 admitted, 2 refused), 1 from OTHER, 4 shadowed searches (2 would be refused). */
export async function sendTraffic(
  sluice: RunningSluice,
  headers: Record<string, string> = {},
): Promise<void> {
  sluice.sensitive(NICK);
  for (let i = 0; i < 5; i++) await sluice.post('/v1/decisions', { items: [fromAddress(OFFENDER)] }, headers);
  await sluice.post('/v1/decisions', { items: [fromAddress(OTHER)] }, headers);
  for (let i = 0; i < 4; i++)
    await sluice.post(
      '/v1/decisions',
      { items: [fromAddress(SHADOWED, 'GET', '/api/search', { 'x-nick': NICK })] },
      headers,
    );
}

/** True once a snapshot counts all of that traffic's refusals. */
export const countsAllRefusals = (s: Snapshot) =>
  totalOf(s, 'login', 'refused') === 2 && totalOf(s, 'search', 'shadow-refused') === 2;
