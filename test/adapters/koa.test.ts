/** The HTTP conformance suite against `sluice/koa` (Koa 3) on a real socket. */
import { createServer } from 'node:http';
import Koa, { type Context, type Middleware } from 'koa';
import { httpConformance, nodeHeader, socketApp, type AppSpec } from '../../src/testing/index.js';
import {
  rateLimit,
  rateLimitOf,
  sendError,
  sendRateLimited,
  type RateLimitInput,
} from '../../src/adapters/koa/index.js';

type Handler = (ctx: Context) => Promise<void>;

/** Reads the whole body before answering, as a handler behind a body parser would. */
const ok: Handler = async (ctx) => {
  for await (const _chunk of ctx.req) {
    // Read and dropped: the point is that a limit answers before this would finish.
  }
  ctx.body = { ok: true };
};

/** A handler behind an optional limit: the limit's `next` is the handler. */
function limited(options: RateLimitInput<unknown> | undefined, handler: Handler): Middleware {
  if (options === undefined) return (ctx) => handler(ctx);
  const limit = rateLimit(options);
  return (ctx) => limit(ctx, () => handler(ctx));
}

/** Koa's core has no mount: a limit under a path prefix runs for that prefix only. */
function under(mount: string | undefined, middleware: Middleware): Middleware {
  if (mount === undefined) return middleware;
  return (ctx, next) =>
    ctx.path === mount || ctx.path.startsWith(`${mount}/`) ? middleware(ctx, next) : next();
}

/** `POST /api/outcome`: answers as the request's x-outcome header asks (see AppSpec.outcome). */
function outcomeRoute(spec: NonNullable<AppSpec['outcome']>): Middleware {
  const { seen, closed } = spec;
  return limited(spec.limit, async (ctx) => {
    seen?.(rateLimitOf(ctx));
    const ask = ctx.get('x-outcome') || '200';
    if (ask === 'throw') throw new Error('the handler failed');
    if (ask === 'stall') {
      // Koa steps aside: the handler writes to the node response itself and never ends it.
      ctx.respond = false;
      ctx.res.once('close', () => setImmediate(() => closed?.()));
      ctx.res.writeHead(200, { 'content-type': 'text/plain' });
      ctx.res.write('part of a body that never ends');
      return;
    }
    ctx.status = Number(ask);
    ctx.body = { ok: true };
  });
}

function build(spec: AppSpec): Koa {
  const app = new Koa();
  // Koa's own 500, without its stack trace on stderr.
  app.silent = true;
  if (spec.exposedByCors !== undefined) {
    const exposed = spec.exposedByCors;
    app.use((ctx, next) => {
      ctx.set('Access-Control-Expose-Headers', exposed);
      return next();
    });
  }
  if (spec.everyRoute !== undefined) {
    app.use(under(spec.everyRouteMount, rateLimit(spec.everyRoute)));
    if (spec.everyRouteTwice === true) app.use(under(spec.everyRouteMount, rateLimit(spec.everyRoute)));
  }
  const login: Handler = async (ctx) => {
    const { limiter, key, headers } = spec.login!;
    let decision;
    try {
      decision = await limiter.take(key(ctx));
    } catch (error) {
      return sendError(ctx, error);
    }
    if (!decision.allowed) return sendRateLimited(ctx, decision, { headers });
    await ok(ctx);
  };
  const routes = new Map<string, Middleware>([
    ['POST /api/things', limited(spec.routes?.['POST /api/things'], ok)],
    ['GET /api/things', limited(undefined, ok)],
    ['GET /health', limited(undefined, ok)],
    ['GET /health/live', limited(undefined, ok)],
    ['POST /api/messages', limited(spec.routes?.['POST /api/messages'], ok)],
    ['POST /api/login', limited(undefined, login)],
  ]);
  if (spec.outcome !== undefined) routes.set('POST /api/outcome', outcomeRoute(spec.outcome));
  // The router: Koa's core has none. HEAD is answered by the GET route (Koa drops the body).
  app.use((ctx, next) => {
    const route = routes.get(`${ctx.method === 'HEAD' ? 'GET' : ctx.method} ${ctx.path}`);
    return route === undefined ? next() : route(ctx, next);
  });
  return app;
}

httpConformance({
  name: 'koa',
  header: (ctx, name) => nodeHeader((ctx as Context).req, name),
  start: (spec) => socketApp(createServer(build(spec).callback())),
  findsClientAddress: true,
  countOnly: true,
});
