/** The HTTP conformance suite against `sluice/node` on a real socket. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import {
  rateLimit,
  rateLimitOf,
  sendError,
  sendRateLimited,
  type RateLimitInput,
} from '../../src/adapters/node/index.js';
import { httpConformance, type AppSpec, type RunningApp } from '../../src/testing/index.js';
import { nodeHeader, socketApp } from '../../src/testing/index.js';

type Limit = (request: IncomingMessage, response: ServerResponse) => Promise<boolean>;

function build(spec: AppSpec): Promise<RunningApp> {
  const limit = (options: RateLimitInput<unknown> | undefined): Limit | undefined =>
    options === undefined ? undefined : rateLimit(options);
  const everyRoute = limit(spec.everyRoute);
  const perRoute = new Map<string, Limit | undefined>([
    ['POST /api/things', limit(spec.routes?.['POST /api/things'])],
    ['POST /api/messages', limit(spec.routes?.['POST /api/messages'])],
  ]);
  const known = new Set([
    'POST /api/things',
    'GET /api/things',
    'POST /api/messages',
    'GET /health',
    'GET /health/live',
  ]);
  const mount = spec.everyRouteMount;
  const outcome = limit(spec.outcome?.limit);

  const server = createServer(async (req, res) => {
    if (spec.exposedByCors !== undefined) res.setHeader('Access-Control-Expose-Headers', spec.exposedByCors);
    const path = (req.url ?? '/').split('?')[0]!;
    if (everyRoute !== undefined && (mount === undefined || path.startsWith(`${mount}/`))) {
      if (!(await everyRoute(req, res))) return;
      if (spec.everyRouteTwice === true && !(await everyRoute(req, res))) return;
    }
    // HEAD is answered like GET, as the frameworks do.
    const route = `${req.method === 'HEAD' ? 'GET' : req.method} ${path}`;
    const own = perRoute.get(route);
    if (own !== undefined && !(await own(req, res))) return;
    if (route === 'POST /api/outcome' && outcome !== undefined) {
      if (!(await outcome(req, res))) return;
      return answerOutcome(req, res, spec.outcome!);
    }
    if (route === 'POST /api/login' && spec.login !== undefined) {
      const { limiter, key, headers } = spec.login;
      let decision;
      try {
        decision = await limiter.take(key(req));
      } catch (error) {
        return sendError(res, error);
      }
      if (!decision.allowed) return sendRateLimited(res, decision, { headers });
    } else if (!known.has(route)) {
      res.statusCode = 404;
      return void res.end();
    }
    // The handler reads the body: a limit that answered late would leave the open-body request hanging.
    for await (const _ of req);
    res.setHeader('Content-Type', 'application/json');
    res.end('{"ok":true}');
  });
  return socketApp(server);
}

/** `POST /api/outcome` as the suite describes it; node has no framework to answer a throw with 500. */
function answerOutcome(
  req: IncomingMessage,
  res: ServerResponse,
  spec: NonNullable<AppSpec['outcome']>,
): void {
  spec.seen?.(rateLimitOf(req));
  const ask = req.headers['x-outcome'] ?? '200';
  if (ask === 'throw') {
    res.statusCode = 500;
    return void res.end();
  }
  if (ask === 'stall') {
    res.once('close', () => setImmediate(() => spec.closed?.()));
    res.writeHead(200, { 'content-type': 'text/plain' });
    return void res.write('part of a body that never ends');
  }
  res.statusCode = Number(ask);
  res.setHeader('Content-Type', 'application/json');
  res.end('{"ok":true}');
}

httpConformance({
  name: 'node:http',
  header: nodeHeader,
  start: build,
  findsClientAddress: true,
  countOnly: true,
  delays: true,
});
