import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ChannelTap, ServerMetrics } from '../serve/metrics.js';
import { peerOf, tooManyFailures } from '../serve/auth.js';
import { json, problem, readJsonOrRefuse, send } from '../serve/http-io.js';
import type { PolicyHolder, ServedPolicy } from '../serve/server.js';
import type { ServerLog } from '../serve/log.js';
import { DashboardAccess, SESSION_COOKIE } from './access.js';
import { bucketAction, KnownBuckets } from './actions.js';
import { dashboardAssets } from './assets.js';
import { bucketIds } from './bucket-ids.js';
import { DashboardFeed } from './feed.js';
import { readForm } from './form.js';
import { inspectBucket } from './inspect.js';
import { loginPage } from './login-page.js';
import { Offenders, TRACKED_OUTCOMES } from './offenders.js';
import { SnapshotMaker } from './snapshot.js';

/** True for the dashboard's own paths: the server answers them, a gateway never forwards them. */
export function isDashboardPath(path: string): boolean {
  return path === '/dashboard' || path.startsWith('/dashboard/');
}

/** Headers of the page and the login form: nothing but the server's own assets may load. */
const PAGE_HEADERS = {
  'Content-Type': 'text/html; charset=utf-8',
  'Cache-Control': 'no-store',
  'Content-Security-Policy':
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/**
 * The live dashboard of `sluice serve`: GET /dashboard (the page), /dashboard/app.js and
 * /dashboard/app.css (its assets), /dashboard/events (Server-Sent Events, a snapshot a second),
 * POST /dashboard/inspect (the bucket inspector), /dashboard/buckets (reset or unblock a bucket by
 * its id) and /dashboard/login (the admin token form).
 * Everything but the static assets wants the admin scope ({@link DashboardAccess}).
 */
export class Dashboard {
  readonly offenders = new Offenders();
  /** Bucket ids, one function for the events and the inspector (its fingerprint key is drawn once). */
  readonly ids: (key: string) => string;
  /** What the server's metrics hand every rule's channel: key ids for refusals, the offenders' listener. */
  readonly tap: ChannelTap;
  private readonly access = new DashboardAccess();
  /** The keys behind the ids shown lately, for the reset and unblock buttons. */
  private readonly known = new KnownBuckets();
  private log: ServerLog | undefined;
  private holder: PolicyHolder | undefined;
  private feed: DashboardFeed | undefined;

  constructor(private readonly intervalMs = 1000) {
    this.ids = bucketIds(() => (this.holder?.current().compiled.policy.clients.secrets.length ?? 0) > 0);
    this.tap = {
      keyHash: (key) => this.known.remember(this.ids(key), key),
      keyHashOutcomes: TRACKED_OUTCOMES,
      listener: (rule) => this.offenders.listener(rule),
    };
  }

  /** Starts the feed over the policy served and the server's metrics; `log` gets the audit lines. */
  start(holder: PolicyHolder, metrics: ServerMetrics, log?: ServerLog): void {
    this.holder = holder;
    this.log = log;
    const maker = new SnapshotMaker({
      registry: metrics.registry,
      offenders: this.offenders,
      current: () => holder.current(),
      lastReload: () => metrics.lastReloadResult,
    });
    this.feed = new DashboardFeed(maker, this.offenders, this.intervalMs);
    this.feed.start();
  }

  /** Ends every stream and stops the feed. */
  close(): void {
    this.feed?.close();
  }

  async handle(req: IncomingMessage, res: ServerResponse, served: ServedPolicy, path: string): Promise<void> {
    const method = req.method ?? 'GET';
    if (path === '/dashboard/app.js' || path === '/dashboard/app.css') {
      if (method !== 'GET' && method !== 'HEAD') return refuse(req, res, 405);
      req.resume();
      return this.asset(res, path.endsWith('.js') ? 'js' : 'css');
    }
    if (path === '/dashboard/login' && method === 'POST') return this.login(req, res, served);
    const access = this.access.check(req, served);
    if (path === '/dashboard' && (method === 'GET' || method === 'HEAD')) {
      req.resume();
      if (access === 'forbidden') return refuse(req, res, 403);
      if (access === 'login') return send(res, { status: 200, headers: PAGE_HEADERS, body: loginPage() });
      return this.asset(res, 'html');
    }
    if (path === '/dashboard/events' && method === 'GET') {
      req.resume();
      if (access !== 'ok') return refuse(req, res, access === 'login' ? 401 : 403);
      if (this.feed === undefined || !this.feed.subscribe(res))
        return send(res, problem(503, 'busy', 'Service Unavailable', 'Too many dashboard streams are open.'));
      return;
    }
    if (path === '/dashboard/inspect' && method === 'POST') {
      if (access !== 'ok') return refuse(req, res, access === 'login' ? 401 : 403);
      const read = await readJsonOrRefuse(req, res);
      if (read === undefined) return;
      const result = await inspectBucket(served.compiled, read.body, (key) =>
        this.known.remember(this.ids(key), key),
      );
      if (!result.ok)
        return send(res, problem(result.status, 'invalid_request', 'Bad Request', result.message));
      const { ok: _ok, ...shown } = result;
      return send(res, json(200, shown));
    }
    if (path === '/dashboard/buckets' && method === 'POST') {
      if (access !== 'ok') return refuse(req, res, access === 'login' ? 401 : 403);
      // A state change: from the dashboard's own page only, as JSON (which no form can send).
      if (!sameOrigin(req) || !isJson(req)) return refuse(req, res, 403);
      const read = await readJsonOrRefuse(req, res);
      if (read === undefined) return;
      const result = await bucketAction(served.compiled, read.body, this.known, this.log);
      if (!result.ok)
        return send(res, problem(result.status, 'invalid_request', 'Bad Request', result.message));
      const { ok: _ok, ...shown } = result;
      return send(res, json(200, shown));
    }
    return refuse(req, res, 404);
  }

  private async asset(res: ServerResponse, kind: 'html' | 'js' | 'css'): Promise<void> {
    let assets;
    try {
      assets = await dashboardAssets();
    } catch {
      return send(
        res,
        problem(500, 'dashboard_unavailable', 'Internal Server Error', "The dashboard's page was not built."),
      );
    }
    if (kind === 'html') return send(res, { status: 200, headers: PAGE_HEADERS, body: assets.html });
    const type = kind === 'js' ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8';
    send(res, {
      status: 200,
      headers: { 'Content-Type': type, 'Cache-Control': 'no-cache', 'X-Content-Type-Options': 'nosniff' },
      body: kind === 'js' ? assets.js : assets.css,
    });
  }

  /** The login form's POST: an admin token becomes a session cookie; anything else the form again. */
  private async login(req: IncomingMessage, res: ServerResponse, served: ServedPolicy): Promise<void> {
    // A form posted from another site would sign this browser in under that site's token.
    if (!sameOrigin(req)) return refuse(req, res, 403);
    const form = await readForm(req);
    const { tokens } = served.compiled.policy;
    if (tokens.length === 0) return redirect(res, []);
    // The form is a way to guess tokens too: the API's limit on failed tries holds here as well.
    const peer = peerOf(req);
    const waitMs = served.throttle?.waitMs(peer) ?? 0;
    if (waitMs > 0) return send(res, tooManyFailures(waitMs));
    const token = form?.get('token') ?? '';
    const session = token === '' ? undefined : this.access.sessionFor(token, tokens);
    if (session === undefined) {
      served.throttle?.failed(peer);
      if (form === undefined) res.setHeader('Connection', 'close');
      return send(res, {
        status: 401,
        headers: PAGE_HEADERS,
        body: loginPage('That is not an admin token of the policy.'),
      });
    }
    redirect(res, [`${SESSION_COOKIE}=${session}; Path=/dashboard; HttpOnly; SameSite=Strict`]);
  }
}

/**
 * True unless the browser says the request comes from another origin than this server's: by
 * Sec-Fetch-Site where it sends one, else by Origin (which a page without a referrer sends as
 * `null`); a client that sends neither is no browser.
 */
function sameOrigin(req: IncomingMessage): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin' || site === 'none';
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

function isJson(req: IncomingMessage): boolean {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase() === 'application/json';
}

function redirect(res: ServerResponse, cookies: string[]): void {
  res.writeHead(303, {
    Location: '/dashboard',
    'Cache-Control': 'no-store',
    'Content-Length': 0,
    ...(cookies.length > 0 ? { 'Set-Cookie': cookies } : {}),
  });
  res.end();
}

const refusals: Record<number, [string, string, string]> = {
  401: [
    'unauthorized',
    'Unauthorized',
    'Sign in at /dashboard with an admin token, or send one as a bearer token.',
  ],
  403: [
    'forbidden',
    'Forbidden',
    'The dashboard wants the admin scope (or, without tokens, a loopback client).',
  ],
  404: ['not_found', 'Not Found', 'No such dashboard path.'],
  405: ['method_not_allowed', 'Method Not Allowed', 'This path answers GET and HEAD.'],
};

function refuse(req: IncomingMessage, res: ServerResponse, status: 401 | 403 | 404 | 405): void {
  req.resume();
  const [code, title, detail] = refusals[status]!;
  const response = problem(status, code, title, detail);
  if (status === 401) response.headers['WWW-Authenticate'] = 'Bearer';
  if (status === 405) response.headers.Allow = 'GET, HEAD';
  send(res, response);
}
