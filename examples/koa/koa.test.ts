/**
 * The Koa adapter of this example passes the HTTP conformance suite of `sluice/testing`, the
 * suite sluice's own adapters pass: same statuses, headers and bodies, on a real socket.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { it } from 'node:test';
import assert from 'node:assert/strict';
import Koa, { type Context, type Middleware } from 'koa';
import { httpConformance, nodeHeader, socketApp, type AppSpec } from '../../src/testing/index.js';
import { shownInDocs } from '../shared/shown-in-docs.js';
import type { RateLimitOptions } from '../../src/http/index.js';
import { rateLimit, sendError, sendRateLimited } from './rate-limit.js';

type Handler = (ctx: Context) => Promise<void>;

/** Reads the whole body before answering, as a handler behind a body parser would. */
const ok: Handler = async (ctx) => {
  for await (const _chunk of ctx.req) {
    // Read and dropped: the point is that a limit answers before this would finish.
  }
  ctx.body = { ok: true };
};

/** A handler behind an optional limit: the limit's `next` is the handler. */
function limited(options: RateLimitOptions<unknown> | undefined, handler: Handler): Middleware {
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

function build(spec: AppSpec): Koa {
  const app = new Koa();
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
});

it('docs/adapters.md shows rate-limit.ts as it is', () => {
  const guide = readFileSync(new URL('../../docs/adapters.md', import.meta.url), 'utf8');
  assert.ok(
    guide.includes(shownInDocs(new URL('./rate-limit.ts', import.meta.url))),
    'copy the file into the guide again',
  );
});
