/**
 * The report API (examples/reports/README.md) on plain node:http: GET and POST /api/v1/report share one daily
 * quota per identity, and the identity decides the bucket:
 *
 * 1. an offered API key (Bearer or X-API-Key) is checked first; invalid or revoked → 401, with no
 *    fallback to the session or to anonymous access, and no quota touched;
 * 2. otherwise a session counts if its user still exists → the account bucket;
 * 3. a session error, an incomplete session or a deleted user → anon, the IP bucket.
 *
 * Only then is exactly the chosen bucket charged; X-RateLimit-Limit/-Remaining describe it and
 * X-Auth-Mode names it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { rateLimit, sendError } from '../../src/adapters/node/index.js';
import { isSluiceError, resolveIdentity, systemClock, type Clock, type Limiter } from '../../src/index.js';
import { HttpError, cookie, readJson, sendJson, sendProblem } from '../shared/http.js';
import { ApiKeys, MemorySessions, Users, type SessionStore, type UserDirectory } from './data.js';
import { clientAddressOf, reportBuckets, reportQuota } from './policy.js';

export interface ReportsOptions {
  /** AUTH_SECRET, current first, then older generations (at least 32 bytes each). */
  authSecrets: readonly string[];
  /** Inject a manual clock in tests. @default Date.now */
  clock?: Clock;
  /**
   * The quota limiter. Two deployments sharing one store share it; by default a memory-store
   * quota on `clock`.
   */
  quota?: Limiter;
  apiKeys?: ApiKeys;
  sessions?: SessionStore;
  users?: UserDirectory;
  /**
   * The key the quota charges for an account's bucket. With a PostgresStore, pass
   * `(userId, bucket) => store.accountKey(userId, bucket)`: the row is then linked to the user
   * and deleting the user erases it, in every secret generation.
   * @default the bucket itself
   */
  accountKey?: (userId: number, bucket: string) => string;
  log?: (line: string) => void;
}

export function createApp(options: ReportsOptions) {
  const {
    authSecrets,
    clock = systemClock,
    quota = reportQuota(clock),
    apiKeys = new ApiKeys(),
    sessions = new MemorySessions(),
    users = new Users(),
    accountKey = (_userId: number, bucket: string) => bucket,
    log = (line: string) => console.log(line),
  } = options;
  const buckets = reportBuckets(authSecrets);
  const sessionOf = async (request: IncomingMessage) => {
    const sid = cookie(request, 'sid');
    return sid === undefined ? null : sessions.get(sid);
  };

  const reportLimit = rateLimit({
    limits: quota,
    headers: 'legacy', // X-RateLimit-Limit / -Remaining (/ -Reset) of the bucket charged
    cacheControl: 'private, no-store', // the 429 and 401 too: they answer for one identity
    key: async (request) => {
      const identity = await resolveIdentity(request, {
        apiKey: (key) => {
          const row = apiKeys.find(key);
          return row && { bucket: buckets.apiKey(row.id), limit: row.dailyLimit, revoked: row.revoked };
        },
        session: sessionOf,
        userExists: (id) => users.exists(Number(id)),
        accountBucket: (id) => accountKey(Number(id), buckets.accounts.current(id)),
        anonBucket: (request) => buckets.anon(clientAddressOf(request).address),
      });
      // A refused key is a 401 here: no weaker identity, no bucket charged.
      if (!identity.ok) throw identity.error;
      // A session that fell back to anon is worth a line: the reason, never the error (it may
      // quote session data) and never the bucket's subject.
      if (identity.mode === 'anon' && identity.reason !== 'no-session')
        log(`report: session fell back to anon (${identity.reason})`);
      return { key: identity.bucket, limit: identity.limit, authMode: identity.mode };
    },
  });

  /**
   * Account erasure: the account's buckets under every AUTH_SECRET generation, then the user.
   * The anonymous IP buckets and API-key buckets of other identities stay as they are.
   */
  async function deleteUserAccount(userId: number): Promise<void> {
    for (const key of buckets.accounts.all(userId)) await quota.reset(accountKey(userId, key));
    await users.delete(userId);
  }

  async function route(request: IncomingMessage, response: ServerResponse, path: string) {
    const method = request.method ?? 'GET';
    // Every API response, 429 and 401 included, is about one identity: no cache may keep it.
    response.setHeader('Cache-Control', 'private, no-store');
    if (path === '/api/v1/report' && (method === 'GET' || method === 'POST')) {
      if (!(await reportLimit(request, response))) return;
      const input = method === 'POST' ? await readJson(request) : {};
      return sendJson(response, method === 'POST' ? 201 : 200, { report: { kind: input.kind ?? 'default' } });
    }
    if (path === '/api/v1/account' && method === 'DELETE') {
      const session = await sessionOf(request);
      const userId = session?.userId;
      if (userId === undefined || !(await users.exists(userId)))
        throw new HttpError(401, 'unauthenticated', 'Session required');
      await deleteUserAccount(userId);
      return sendJson(response, 204);
    }
    throw new HttpError(404, 'not_found', 'Not found');
  }

  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://reports').pathname;
    route(request, response, path).catch((error: unknown) => {
      if (response.headersSent) return void response.destroy();
      if (error instanceof HttpError) return sendProblem(response, error);
      if (!isSluiceError(error)) console.error('reports: unexpected error', (error as Error)?.name);
      sendError(response, error);
    });
  });
  return { server, quota, accounts: buckets.accounts, deleteUserAccount };
}
