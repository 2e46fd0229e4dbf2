/** The HTTP conformance suite against `sluice/express` (Express 5) on a real socket. */
import { createServer } from 'node:http';
import express, { type ErrorRequestHandler, type Request, type RequestHandler } from 'express';
import {
  rateLimit,
  sendError,
  sendRateLimited,
  type RateLimitInput,
} from '../../src/adapters/express/index.js';
import { httpConformance, type AppSpec, type RunningApp } from '../../src/testing/index.js';
import { nodeHeader, socketApp } from '../../src/testing/index.js';

function build(spec: AppSpec): Promise<RunningApp> {
  const app = express();
  const limit = (options: RateLimitInput<unknown> | undefined): RequestHandler[] =>
    options === undefined ? [] : [rateLimit(options)];
  // The handlers read the body: a limit that answered late would leave the open-body request hanging.
  const body = express.text({ type: '*/*', limit: '2mb' });
  const ok: RequestHandler = (_req, res) => void res.json({ ok: true });

  if (spec.exposedByCors !== undefined) {
    const exposed = spec.exposedByCors;
    app.use((_req, res, next) => {
      res.set('Access-Control-Expose-Headers', exposed);
      next();
    });
  }
  if (spec.everyRoute !== undefined) {
    const mount = spec.everyRouteMount ?? '/';
    app.use(mount, rateLimit(spec.everyRoute));
    if (spec.everyRouteTwice === true) app.use(mount, rateLimit(spec.everyRoute));
  }
  app.post('/api/things', limit(spec.routes?.['POST /api/things']), body, ok);
  app.get('/api/things', ok);
  app.get('/health', ok);
  app.get('/health/live', ok);
  app.post('/api/messages', limit(spec.routes?.['POST /api/messages']), body, ok);
  app.post('/api/login', body, async (req: Request, res) => {
    const { limiter, key, headers } = spec.login!;
    let decision;
    try {
      decision = await limiter.take(key(req));
    } catch (error) {
      return sendError(res, error);
    }
    if (!decision.allowed) return sendRateLimited(res, decision, { headers });
    res.json({ ok: true });
  });
  if (spec.outcome !== undefined) {
    const { limit: options, seen, closed } = spec.outcome;
    app.post('/api/outcome', rateLimit(options), (req, res) => {
      seen?.(req.rateLimit);
      const ask = req.get('x-outcome') ?? '200';
      if (ask === 'throw') throw new Error('the handler failed');
      if (ask === 'stall') {
        res.once('close', () => setImmediate(() => closed?.()));
        res.writeHead(200, { 'content-type': 'text/plain' });
        return void res.write('part of a body that never ends');
      }
      res.status(Number(ask)).json({ ok: true });
    });
  }
  // Express's own 500, without its stack trace on stderr.
  const quietErrors: ErrorRequestHandler = (_error, _req, res, _next) => void res.status(500).end();
  app.use(quietErrors);
  return socketApp(createServer(app));
}

httpConformance({
  name: 'express',
  header: nodeHeader,
  start: build,
  findsClientAddress: true,
  countOnly: true,
  delays: true,
});
