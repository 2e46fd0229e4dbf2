/** The HTTP conformance suite against `sluice/fastify` (Fastify 5) through `app.inject`. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import Fastify, { type FastifyReply, type FastifyRequest, type LightMyRequestResponse } from 'fastify';
import { MemoryStore, createLimiter, tokenBucket } from '../../src/index.js';
import {
  rateLimit,
  rateLimitPlugin,
  sendError,
  sendRateLimited,
  type RateLimitOptions,
  type RateLimitInput,
} from '../../src/adapters/fastify/index.js';
import { httpConformance, type AppSpec, type HttpReply, type RunningApp } from '../../src/testing/index.js';
import { abandonRequest, leavingRequest, nodeHeader } from '../../src/testing/index.js';
import type { AddressInfo } from 'node:net';

function reply(response: LightMyRequestResponse): HttpReply {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return { status: response.statusCode, headers, body: response.body };
}

async function build(spec: AppSpec): Promise<RunningApp> {
  const app = Fastify();
  // Fastify parses text/plain and JSON bodies itself; handlers read `request.body`.
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
  const ok = async () => ({ ok: true });
  const limit = (options: RateLimitInput<unknown> | undefined) =>
    options === undefined ? {} : { onRequest: rateLimit(options) };

  if (spec.exposedByCors !== undefined) {
    const exposed = spec.exposedByCors;
    app.addHook('onRequest', async (_request, r) => void r.header('Access-Control-Expose-Headers', exposed));
  }
  if (spec.everyRoute !== undefined) {
    const mount = spec.everyRouteMount;
    if (mount === undefined) {
      await app.register(rateLimitPlugin, spec.everyRoute);
      if (spec.everyRouteTwice === true) await app.register(rateLimitPlugin, spec.everyRoute);
    } else {
      // Fastify mounts by route prefix; a hook that passes other paths by stands for it here.
      const hook = rateLimit(spec.everyRoute);
      app.addHook('onRequest', async (request, r) => {
        if (request.url.startsWith(`${mount}/`)) await hook(request, r);
      });
    }
  }
  app.post('/api/things', limit(spec.routes?.['POST /api/things']), ok);
  app.get('/api/things', ok);
  app.get('/health', ok);
  app.get('/health/live', ok);
  app.post('/api/messages', limit(spec.routes?.['POST /api/messages']), ok);
  app.post('/api/login', async (request: FastifyRequest, r: FastifyReply) => {
    const { limiter, key, headers } = spec.login!;
    let decision;
    try {
      decision = await limiter.take(key(request));
    } catch (error) {
      return sendError(r, error);
    }
    if (!decision.allowed) return sendRateLimited(r, decision, { headers });
    return { ok: true };
  });
  if (spec.outcome !== undefined) {
    const { limit: options, seen, closed } = spec.outcome;
    app.post('/api/outcome', { onRequest: rateLimit(options) }, async (request, r) => {
      seen?.(request.rateLimit);
      const ask = request.headers['x-outcome'] ?? '200';
      if (ask === 'throw') throw new Error('the handler failed');
      if (ask === 'stall') {
        r.hijack();
        r.raw.once('close', () => setImmediate(() => closed?.()));
        r.raw.writeHead(200, { 'content-type': 'text/plain' });
        r.raw.write('part of a body that never ends');
        return r;
      }
      return r.code(Number(ask)).send({ ok: true });
    });
  }
  await app.ready();
  // A real socket only for a client that goes away: inject has no connection to close.
  let port: number | undefined;
  const listening = async (): Promise<number> => {
    if (port === undefined) {
      await app.listen({ port: 0, host: '127.0.0.1' });
      port = (app.server.address() as AddressInfo).port;
    }
    return port;
  };
  return {
    async abandon(url, headers) {
      return abandonRequest(await listening(), url, headers);
    },
    async leaving(url, headers) {
      return leavingRequest(await listening(), url, headers);
    },
    async request(method, url, headers = {}) {
      const payload = method === 'POST' ? '{"name":"thing"}' : undefined;
      const contentType = payload === undefined ? {} : { 'content-type': 'application/json' };
      return reply(
        await app.inject({ method: method as 'GET', url, headers: { ...contentType, ...headers }, payload }),
      );
    },
    async requestWithOpenBody(url, headers) {
      // A body stream that never ends: inject only answers because the hook refused first.
      const payload = new Readable({ read() {} });
      payload.push('part of a body that never ends');
      return reply(
        await app.inject({
          method: 'POST',
          url,
          headers: { 'content-type': 'text/plain', 'content-length': '1048576', ...headers },
          payload,
        }),
      );
    },
    close: () => app.close(),
  };
}

httpConformance({
  name: 'fastify',
  header: nodeHeader,
  start: build,
  findsClientAddress: true,
  countOnly: true,
  delays: true,
});

describe('fastify: rateLimitPlugin encapsulation', () => {
  const options = () => ({
    limits: createLimiter({
      name: 'api',
      rule: tokenBucket({ limit: 1, period: '1m' }),
      store: new MemoryStore(),
    }),
    key: () => 'k',
  });

  it('registered in a child context it limits that context only, not its siblings or the parent', async () => {
    const app = Fastify();
    await app.register(async (api) => {
      await api.register(rateLimitPlugin, options());
      api.get('/api/one', async () => 'one');
    });
    app.get('/health', async () => 'up');
    const statuses = [];
    for (const url of ['/api/one', '/api/one', '/health', '/health']) {
      statuses.push((await app.inject({ url })).statusCode);
    }
    assert.deepEqual(statuses, [200, 429, 200, 200]);
    await app.close();
  });

  it('registered at the root it reaches routes of child contexts declared later', async () => {
    const app = Fastify();
    await app.register(rateLimitPlugin, options());
    await app.register(async (child) => void child.get('/child', async () => 'child'));
    const statuses = [
      (await app.inject({ url: '/child' })).statusCode,
      (await app.inject({ url: '/child' })).statusCode,
    ];
    assert.deepEqual(statuses, [200, 429]);
    await app.close();
  });

  it('the plugin rejects unknown options at registration', async () => {
    const app = Fastify();
    app.register(rateLimitPlugin, { ...options(), limt: 3 } as RateLimitOptions<FastifyRequest>);
    await assert.rejects(async () => {
      await app.ready();
    }, /limt/);
  });
});

describe('rateLimitPlugin register options', () => {
  it("ignores Fastify's own register options (prefix, logLevel) instead of rejecting them", async () => {
    const limits = createLimiter({
      name: 'p',
      rule: tokenBucket({ limit: 1, period: '1h' }),
      store: new MemoryStore(),
    });
    const app = Fastify();
    await app.register(
      async (api) => {
        await api.register(rateLimitPlugin, { limits, key: () => 'k', logLevel: 'warn' } as never);
        api.get('/x', async () => 'ok');
      },
      { prefix: '/api' },
    );
    assert.equal((await app.inject('/api/x')).statusCode, 200);
    assert.equal((await app.inject('/api/x')).statusCode, 429);
    await app.close();
  });
});
