import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { HttpResponse } from '../../http/problem.js';
import { isDashboardPath, type Dashboard } from '../dashboard/dashboard.js';
import type { EnvoyDomains } from '../envoy/config.js';
import type { CompiledPolicy } from '../policy/compile.js';
import type { ScopeName } from '../policy/model.js';
import { apiValidator, bodyErrors } from './api-schemas.js';
import { clear, decide, peek, type Item } from './decide.js';
import { isForwarded, type Gateway } from './gateway.js';
import { json, problem, readJsonOrRefuse, send, unexpected } from './http-io.js';
import { openApiDocument } from './openapi.js';
import { normalizePath, pathOf } from '../../http/path.js';
import { illFormedStrings } from './well-formed.js';
import type { AuthThrottle } from './auth-throttle.js';

const LONE_SURROGATE = 'holds a lone surrogate (not well-formed UTF-16)';

/** The policy being served, with what the server needs besides: its tokens' check and its store's health. */
export interface ServedPolicy {
  readonly compiled: CompiledPolicy;
  /** undefined when the request may go on, else the 401 or 403 to answer. */
  authorize(req: IncomingMessage, scope: ScopeName): HttpResponse | undefined;
  /**
   * undefined when a request to the server's own routes (not the gateway's) may go on, else the
   * 421 (a Host the server does not answer without tokens) or 403 (a cross-site browser request
   * to a state-changing route) to answer. See siteGuard.
   */
  site?(req: IncomingMessage, path: string): HttpResponse | undefined;
  /** Failed authentications by peer (the dashboard's login form counts its own there too). */
  readonly throttle?: AuthThrottle;
  /** The store's kind, for /readyz. */
  readonly storeType: string;
  /** True when the store answers. */
  ready(): Promise<boolean>;
  /** The domains of Envoy's rate limit service, when the policy has any. */
  readonly envoy?: EnvoyDomains;
}

/** Paths answered by another part of the server (Envoy's `POST /json`), before any other. */
export type ExtraRoutes = Readonly<
  Record<string, (req: IncomingMessage, res: ServerResponse) => Promise<void>>
>;

/**
 * Where the server finds the policy for each request: read once per request, so that a reload
 * can swap the whole policy at once and a request never sees half of each.
 */
export interface PolicyHolder {
  current(): ServedPolicy;
  /**
   * Marks `served` as in use by one request until the function returned is called: a policy a
   * reload replaced is closed only once no request uses it.
   */
  hold?(served: ServedPolicy): () => void;
  /** Told of an error that became a 500 (to log it). */
  failed?(error: unknown): void;
  /** The Prometheus text exposition of GET /metrics. */
  metrics?(): Promise<{ contentType: string; body: string }>;
}

type Batch = { items: Item[] };
type ForgetBatch = { items: (Item | { key: string; rules?: string[] })[] };

interface Route {
  scope: ScopeName;
  validate: ValidateFunction;
  run(policy: CompiledPolicy, body: Batch | ForgetBatch): Promise<unknown>;
}

const batch = apiValidator('Batch');
const routes: Record<string, Route> = {
  '/v1/decisions': {
    scope: 'decide',
    validate: batch,
    run: (p, b) => each(b, (item) => decide(p, item as Item)),
  },
  '/v1/peek': { scope: 'decide', validate: batch, run: (p, b) => each(b, (item) => peek(p, item as Item)) },
  '/v1/reset': { scope: 'admin', validate: batch, run: (p, b) => each(b, (item) => clear(p, item, false)) },
  '/v1/forget': {
    scope: 'admin',
    validate: apiValidator('ForgetBatch'),
    run: (p, b) => each(b, (item) => clear(p, item, true)),
  },
};

/** Items one after the other, in order: two items of one key see each other's charge. */
async function each<T>(
  body: Batch | ForgetBatch,
  run: (item: Batch['items'][number] | ForgetBatch['items'][number]) => Promise<T>,
) {
  const results: T[] = [];
  for (const item of body.items) results.push(await run(item));
  return { results };
}

const openApiBody = JSON.stringify(openApiDocument);

/**
 * What a listener answers: `all` the server's own paths and, with a gateway, every other path of
 * a policy that names an upstream; `gateway` every request (the server's own paths are on an
 * admin listener of their own); `admin` the server's own paths only.
 */
export type ListenerRole = 'all' | 'gateway' | 'admin';

/** A listener of the server: HTTP, or HTTPS with `server.tls`. */
export type Listener = Server | HttpsServer;

/** Options of {@link createDecisionServer}. */
export interface DecisionServerOptions {
  /** @default 'all' */
  role?: ListenerRole;
  /** The gateway: it forwards (`all`, `gateway`) and tells /readyz whether its upstreams answer. */
  gateway?: Gateway;
  /** /dashboard and below. */
  dashboard?: Dashboard;
  /** Paths answered before any other (Envoy's `POST /json`), on a listener of the server's own paths. */
  extra?: ExtraRoutes;
  /** HTTPS with this certificate (chain) and key, PEM. */
  tls?: { cert: Buffer; key: Buffer };
}

/**
 * The decision API on node:http (no framework): POST /v1/decisions, /v1/peek, /v1/reset,
 * /v1/forget; GET /healthz, /readyz, /openapi.json, /metrics. Every error is problem+json. With a
 * gateway, the other paths of a policy that names an upstream are the gateway's (WebSocket
 * upgrades too), or all of them on a listener whose role is `gateway`. With a dashboard,
 * /dashboard and below are its.
 */
export function createDecisionServer(holder: PolicyHolder, options: DecisionServerOptions = {}): Listener {
  const { role = 'all', gateway, extra = {} } = options;
  const routes = role !== 'gateway' && Object.keys(extra).length > 0 ? extra : undefined;
  // Only a listener of the server's own paths and the application's tells them apart.
  const forwards = (served: ServedPolicy, url: string | undefined): boolean =>
    role === 'gateway' || (role === 'all' && isForwarded(served.compiled, url));
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const served = holder.current();
    const release = holder.hold?.(served);
    const own = routes?.[(req.url ?? '/').split('?')[0]!];
    let work: Promise<void>;
    if (own === undefined && gateway !== undefined && forwards(served, req.url))
      work = gateway.web(served.compiled, req, res);
    else {
      // The path in the one spelling the gateway tells its own paths by, so both agree on them.
      const path = normalizePath(pathOf(req.url));
      const refused = served.site?.(req, path);
      if (refused !== undefined) {
        req.resume();
        send(res, refused);
        work = Promise.resolve();
      } else work = own !== undefined ? own(req, res) : handle(holder, served, req, res, path, options);
    }
    // One reaction for both ends (a catch and a finally would add two promises per request).
    work.then(release, (error: unknown) => {
      try {
        holder.failed?.(error);
        if (!res.headersSent) send(res, unexpected(error));
        else res.destroy();
      } finally {
        release?.();
      }
    });
  };
  const server: Listener =
    options.tls === undefined ? createServer(onRequest) : createHttpsServer(options.tls, onRequest);
  if (gateway !== undefined && role !== 'admin')
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const served = holder.current();
      const release = holder.hold?.(served);
      gateway
        .upgrade(served.compiled, req, socket, head, role === 'gateway')
        .catch(() => socket.destroy())
        .finally(release);
    });
  return server;
}

async function handle(
  holder: PolicyHolder,
  served: ServedPolicy,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  { dashboard, gateway }: DecisionServerOptions,
): Promise<void> {
  if (dashboard !== undefined && isDashboardPath(path)) return dashboard.handle(req, res, served, path);
  const route = routes[path];
  if (route !== undefined) {
    if (req.method !== 'POST') return refuseMethod(req, res, 'POST');
    const denied = served.authorize(req, route.scope);
    if (denied !== undefined) return send(res, denied);
    const read = await readJsonOrRefuse(req, res);
    if (read === undefined) return;
    const { body } = read;
    if (!route.validate(body)) return send(res, invalid(bodyErrors(route.validate.errors)));
    const illFormed = illFormedStrings(body);
    if (illFormed.length > 0)
      return send(res, invalid(illFormed.map((at) => ({ path: at, message: LONE_SURROGATE }))));
    const unknown = unknownRules(served.compiled, body as ForgetBatch);
    if (unknown.length > 0) return send(res, invalid(unknown));
    return send(res, json(200, await route.run(served.compiled, body as Batch)));
  }
  const metrics = path === '/metrics' ? holder.metrics : undefined;
  if (path === '/healthz' || path === '/readyz' || path === '/openapi.json' || metrics !== undefined) {
    if (req.method !== 'GET' && req.method !== 'HEAD') return refuseMethod(req, res, 'GET, HEAD');
    if (path === '/healthz') return send(res, json(200, { status: 'ok' }));
    if (metrics !== undefined) {
      const { contentType, body } = await metrics.call(holder);
      return send(res, { status: 200, headers: { 'Content-Type': contentType }, body });
    }
    if (path === '/openapi.json')
      return send(res, { status: 200, headers: { 'Content-Type': 'application/json' }, body: openApiBody });
    return send(res, await readiness(served, gateway));
  }
  req.resume();
  send(res, problem(404, 'not_found', 'Not Found', 'No such endpoint; see /openapi.json.'));
}

/**
 * /readyz: ready when the store answers and, in gateway mode, every route's upstream accepts
 * connections; each route's state is listed by its name, with the reason in words.
 */
async function readiness(served: ServedPolicy, gateway: Gateway | undefined): Promise<HttpResponse> {
  const gated = gateway !== undefined && served.compiled.policy.upstreams.length > 0;
  const [store, upstreams] = await Promise.all([
    served.ready(),
    gated ? gateway.health(served.compiled) : undefined,
  ]);
  const ready = store && (upstreams ?? []).every((u) => u.status === 'ok');
  return json(ready ? 200 : 503, {
    status: ready ? 'ok' : 'unavailable',
    store: served.storeType,
    ...(upstreams === undefined ? {} : { upstreams }),
  });
}

function refuseMethod(req: IncomingMessage, res: ServerResponse, allow: string): void {
  req.resume();
  const response = problem(
    405,
    'method_not_allowed',
    'Method Not Allowed',
    `This endpoint answers ${allow}.`,
  );
  response.headers.Allow = allow;
  send(res, response);
}

function invalid(errors: { path: string; message: string }[]): HttpResponse {
  return problem(400, 'invalid_request', 'Bad Request', 'The body is not a batch of the documented shape.', {
    errors,
  });
}

/**
 * Rule names the policy does not hold, and concurrency rules (the gateway's alone: the API has
 * no way to release a slot yet), by their place (never their text: it is request input).
 */
function unknownRules(policy: CompiledPolicy, body: ForgetBatch): { path: string; message: string }[] {
  const found: { path: string; message: string }[] = [];
  body.items.forEach((item, i) => {
    const named = 'rule' in item ? policy.rule(item.rule) : undefined;
    if ('rule' in item && named === undefined)
      found.push({ path: `/items/${i}/rule`, message: 'names no rule of the policy' });
    if (named?.concurrency !== undefined)
      found.push({
        path: `/items/${i}/rule`,
        message: 'names a concurrency rule, which only the gateway decides for now',
      });
    if ('rules' in item)
      item.rules?.forEach((name, j) => {
        if (policy.rule(name) === undefined)
          found.push({ path: `/items/${i}/rules/${j}`, message: 'names no rule of the policy' });
      });
  });
  return found;
}
