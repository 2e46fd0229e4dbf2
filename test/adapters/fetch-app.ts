/**
 * The conformance suite's app over the Fetch API with `sluice/fetch`: one handler
 * `(request, info) => Promise<Response>`, served by whichever runtime runs the test (node through
 * @hono/node-server, Bun.serve, Deno.serve; see fetch-serve.ts) or a Worker.
 */
import type { AppSpec } from '../../src/testing/index.js';
import {
  rateLimit,
  rateLimitOf,
  sendError,
  sendRateLimited,
  type FetchLimit,
  type PeerInfo,
  type RateLimitOptions,
  type RateLimitInput,
} from '../../src/adapters/fetch/index.js';
import { EXPOSE_HEADER, mergeExposed } from '../../src/http/index.js';

type Handler = (request: Request, info?: PeerInfo) => Promise<Response>;

/** Reads a request header of a Fetch request, as the suite's key functions do. */
export function fetchHeader(request: unknown, name: string): string | undefined {
  return (request as Request).headers.get(name) ?? undefined;
}

const json = (status = 200) =>
  new Response('{"ok":true}', { status, headers: { 'content-type': 'application/json' } });

/** The handlers read the body: a limit that answered late would leave the open-body request hanging. */
const ok: Handler = async (request) => {
  await request.text();
  return json();
};

export function fetchApp(spec: AppSpec): Handler {
  const limitOf = (options: unknown): FetchLimit | undefined =>
    options === undefined ? undefined : rateLimit(options as RateLimitInput<Request>);
  const limited = (options: unknown, handler: Handler): Handler => limitOf(options)?.wrap(handler) ?? handler;

  const routes = new Map<string, Handler>([
    ['POST /api/things', limited(spec.routes?.['POST /api/things'], ok)],
    ['GET /api/things', ok],
    ['GET /health', ok],
    ['GET /health/live', ok],
    ['POST /api/messages', limited(spec.routes?.['POST /api/messages'], ok)],
  ]);
  if (spec.login !== undefined) {
    const { limiter, key, headers } = spec.login;
    routes.set('POST /api/login', async (request) => {
      let decision;
      try {
        decision = await limiter.take(key(request));
      } catch (error) {
        return sendError(error);
      }
      if (!decision.allowed) return sendRateLimited(decision, { headers });
      return ok(request);
    });
  }
  if (spec.outcome !== undefined) routes.set('POST /api/outcome', outcomeRoute(spec.outcome));

  const route: Handler = async (request, info) => {
    const path = new URL(request.url).pathname;
    // HEAD is answered like GET, as the frameworks do.
    const handler = routes.get(`${request.method === 'HEAD' ? 'GET' : request.method} ${path}`);
    return handler === undefined ? new Response(null, { status: 404 }) : handler(request, info);
  };

  let app = route;
  const everyRoute = limitOf(spec.everyRoute);
  if (everyRoute !== undefined) {
    let wrapped = everyRoute.wrap(route);
    if (spec.everyRouteTwice === true) wrapped = everyRoute.wrap(wrapped);
    const mount = spec.everyRouteMount;
    app =
      mount === undefined
        ? wrapped
        : (request, info) =>
            new URL(request.url).pathname.startsWith(`${mount}/`)
              ? wrapped(request, info)
              : route(request, info);
  }

  return async (request, info) => {
    let response: Response;
    try {
      response = await app(request, info);
    } catch {
      // What a server answers for a handler that throws, without logging it.
      response = new Response('Internal Server Error', { status: 500 });
    }
    if (spec.exposedByCors !== undefined) {
      // A CORS layer around the app that merges its list with the one already on the response.
      const ours = response.headers.get(EXPOSE_HEADER);
      response.headers.set(
        EXPOSE_HEADER,
        ours === null ? spec.exposedByCors : mergeExposed(spec.exposedByCors, ours),
      );
    }
    return response;
  };
}

/** `POST /api/outcome` as the suite describes it. */
function outcomeRoute(outcome: NonNullable<AppSpec['outcome']>): Handler {
  return rateLimit(outcome.limit as RateLimitOptions<Request>).wrap(async (request) => {
    outcome.seen?.(rateLimitOf(request));
    const ask = request.headers.get('x-outcome') ?? '200';
    if (ask === 'throw') throw new Error('the handler failed');
    if (ask === 'stall') {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('part of a body that never ends'));
        },
        cancel() {
          // The server cancels the body when the client has gone: after the adapter's own cancel.
          setTimeout(() => outcome.closed?.(), 0);
        },
      });
      return new Response(body, { status: 200, headers: { 'content-type': 'text/plain' } });
    }
    return json(Number(ask));
  });
}
