/** The HTTP conformance suite against `sluice/hono` (Hono 4) through `app.request`. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { AddressInfo } from 'node:net';
import { MemoryStore, clientAddress, createLimiter, tokenBucket } from '../../src/index.js';
import { FailingStore } from '../../src/testing/index.js';
import { rateLimit, sendError, sendRateLimited, type RateLimitInput } from '../../src/adapters/hono/index.js';
import { httpConformance, type AppSpec, type HttpReply, type RunningApp } from '../../src/testing/index.js';
import { abandonRequest, leavingRequest } from '../../src/testing/index.js';
import type { ServerResponse } from 'node:http';

async function reply(response: Response): Promise<HttpReply> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => (headers[name] = value));
  return { status: response.status, headers, body: await response.text() };
}

async function build(spec: AppSpec): Promise<RunningApp> {
  const app = new Hono();
  const pass: MiddlewareHandler = (_c, next) => next();
  const limit = (options: RateLimitInput<unknown> | undefined) =>
    options === undefined ? pass : rateLimit(options);
  // The handlers read the body: a limit that answered late would leave the open-body request hanging.
  const ok = async (c: Context) => {
    await c.req.text();
    return c.json({ ok: true });
  };

  if (spec.exposedByCors !== undefined) {
    const exposed = spec.exposedByCors;
    app.use(async (c, next) => {
      c.header('Access-Control-Expose-Headers', exposed);
      await next();
    });
  }
  if (spec.everyRoute !== undefined) {
    const mount = spec.everyRouteMount === undefined ? '*' : `${spec.everyRouteMount}/*`;
    app.use(mount, rateLimit(spec.everyRoute));
    if (spec.everyRouteTwice === true) app.use(mount, rateLimit(spec.everyRoute));
  }
  app.post('/api/things', limit(spec.routes?.['POST /api/things']), ok);
  app.get('/api/things', ok);
  app.get('/health', ok);
  app.get('/health/live', ok);
  app.post('/api/messages', limit(spec.routes?.['POST /api/messages']), ok);
  app.post('/api/login', async (c) => {
    const { limiter, key, headers } = spec.login!;
    let decision;
    try {
      decision = await limiter.take(key(c));
    } catch (error) {
      return sendError(c, error);
    }
    if (!decision.allowed) return sendRateLimited(c, decision, { headers });
    return c.json({ ok: true });
  });
  if (spec.outcome !== undefined) {
    const { limit: options, seen, closed } = spec.outcome;
    app.post('/api/outcome', rateLimit(options), (c) => {
      seen?.(c.get('rateLimit'));
      const ask = c.req.header('x-outcome') ?? '200';
      if (ask === 'throw') throw new Error('the handler failed');
      if (ask === 'stall') {
        // Only on a real socket (see abandon): @hono/node-server passes its response as env.
        const outgoing = (c.env as { outgoing: ServerResponse }).outgoing;
        outgoing.once('close', () => setImmediate(() => closed?.()));
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode('part of a body that never ends'));
          },
        });
        return c.body(body, 200, { 'content-type': 'text/plain' });
      }
      return c.json({ ok: true }, Number(ask) as 200);
    });
  }
  // Hono's own 500, without logging the error.
  app.onError((_error, c) => c.text('Internal Server Error', 500));
  const base = 'http://127.0.0.1';
  // A real socket only for a client that goes away: app.request has no connection to close.
  let server: ReturnType<typeof serve> | undefined;
  const listening = async (): Promise<number> => {
    if (server === undefined) {
      server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 });
      await new Promise((resolve) => server!.once('listening', resolve));
    }
    return (server.address() as AddressInfo).port;
  };
  return {
    async abandon(path, headers) {
      return abandonRequest(await listening(), path, headers);
    },
    async leaving(path, headers) {
      return leavingRequest(await listening(), path, headers);
    },
    async request(method, path, headers = {}) {
      const body = method === 'POST' ? '{"name":"thing"}' : undefined;
      return reply(await app.request(base + path, { method, headers, body }));
    },
    async requestWithOpenBody(path, headers) {
      // A body stream that never closes: the response only comes because the limit answered first.
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('part of a body that never ends'));
        },
      });
      const init = {
        method: 'POST',
        headers: { 'content-type': 'text/plain', ...headers },
        body,
        duplex: 'half',
      };
      return reply(await app.request(base + path, init as RequestInit));
    },
    async close() {
      if (server === undefined) return;
      (server as unknown as { closeAllConnections(): void }).closeAllConnections();
      await new Promise((resolve) => server!.close(resolve));
    },
  };
}

httpConformance({
  name: 'hono',
  header: (c, name) => (c as Context).req.header(name),
  start: build,
  countOnly: true,
  delays: true,
});

describe('hono: with its own cors() middleware', () => {
  it('the expose list of hono/cors is kept and ours added, on 200 and 429', async () => {
    const limits = createLimiter({
      name: 'api',
      rule: tokenBucket({ limit: 1, period: '1m' }),
      store: new MemoryStore(),
    });
    const app = new Hono();
    app.use(cors({ origin: 'https://app.example', exposeHeaders: ['X-Request-Id'] }));
    app.use(rateLimit({ limits, key: () => 'k' }));
    app.get('/', (c) => c.text('ok'));
    const init = { headers: { origin: 'https://app.example' } };
    const first = await app.request('http://127.0.0.1/', init);
    const second = await app.request('http://127.0.0.1/', init);
    assert.deepEqual(
      [
        first.status,
        second.status,
        first.headers.get('access-control-expose-headers'),
        second.headers.get('access-control-expose-headers'),
      ],
      [
        200,
        429,
        'X-Request-Id, Retry-After, RateLimit, RateLimit-Policy',
        'X-Request-Id, Retry-After, RateLimit, RateLimit-Policy',
      ],
    );
    assert.equal(second.headers.get('access-control-allow-origin'), 'https://app.example');
  });
});

describe('hono: allow and deny on a real socket', () => {
  it('address from @hono/node-server getConnInfo and clientAddress finds the client behind a loopback proxy', async () => {
    const store = new FailingStore();
    const limits = createLimiter({ name: 'api', rule: tokenBucket({ limit: 5, period: '1m' }), store });
    const proxies = { trustedProxies: ['127.0.0.0/8'] };
    const app = new Hono();
    app.use(
      rateLimit({
        limits,
        key: () => 'k',
        address: (c) =>
          clientAddress({ request: c.req.raw, peer: getConnInfo(c).remote.address }, proxies).address,
        deny: ['203.0.113.0/24'],
        allow: ['10.0.0.0/8'],
      }),
    );
    app.get('/', (c) => c.text('ok'));
    const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 });
    await new Promise((resolve) => server.once('listening', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      const from = async (client: string) => {
        const response = await fetch(base, { headers: { 'x-forwarded-for': client } });
        return [response.status, (await response.json().catch(() => ({}))).code ?? null];
      };
      assert.deepEqual(await from('203.0.113.9'), [403, 'denied']);
      assert.deepEqual(await from('10.9.8.7'), [200, null]);
      assert.equal(store.calls, 0, 'neither the denied nor the allowed client reached the store');
      assert.deepEqual(await from('198.51.100.1'), [200, null]);
      assert.equal(store.calls, 1);
    } finally {
      (server as unknown as { closeAllConnections(): void }).closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
