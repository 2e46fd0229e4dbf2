/**
 * The HTTP adapter conformance suite: every adapter runs these scenarios and must answer with the
 * exact statuses, header values and JSON bodies written here, so that all adapters answer alike.
 * It registers its tests with `node:test` (`describe` / `it`) and asserts with `node:assert`: run
 * it under `node --test`.
 *
 * An adapter supplies a harness that builds one app from an {@link AppSpec}: the routes
 * `POST /api/things`, `GET /api/things`, `POST /api/messages`, `GET /health`, `GET /health/live`
 * (handlers read the body, then answer 200 with `{"ok":true}`; HEAD is answered like GET) and
 * `POST /api/login`, whose handler takes from a limiter itself and answers with the adapter's
 * `sendRateLimited` / `sendError`. An adapter that settles `countOnly` also serves
 * `POST /api/outcome` (see {@link AppSpec.outcome}). Time is a manual clock: nothing sleeps to
 * refill.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { manualClock, type ManualClock } from '../core/clock.js';
import { SluiceError, isSluiceError } from '../core/errors.js';
import { tokenBucket } from '../core/rules/token-bucket.js';
import type { KeyResult, RateLimitOptions, RequestRateLimit } from '../http/guard.js';
import type { HeaderStyle } from '../http/headers.js';
import { createLimiter, type Limiter, type LimiterOptions } from '../limiter/limiter.js';
import { DecisionEvents } from '../limiter/events.js';
import { MemoryStore } from '../stores/memory/store.js';
import { FailingStore } from './failing-store.js';
import { httpLeaseCases } from './http-lease-conformance.js';

/**
 * A route of the harness's app that may carry a limit of its own.
 *
 * @example
 * const route: LimitedRoute = 'POST /api/things';
 */
export type LimitedRoute = 'POST /api/things' | 'POST /api/messages';

/**
 * The app a harness builds. Key functions receive the framework's own request object.
 *
 * @default no limit anywhere: every field is optional
 * @example
 * const spec: AppSpec = { routes: { 'POST /api/things': { limits: things, key: () => 'client-1' } } };
 */
export interface AppSpec {
  /** A limit in front of every route (global middleware, hook or plugin). */
  everyRoute?: RateLimitOptions<unknown>;
  /**
   * Where `everyRoute` is mounted: only paths under it pass the limit, and the framework's own
   * way of mounting is used (Express: `app.use('/api', …)`, where `req.path` loses the prefix).
   */
  everyRouteMount?: string;
  /** `everyRoute` mounted twice, as an app that registers the middleware twice would. */
  everyRouteTwice?: boolean;
  /** Limits on one route only. */
  routes?: Partial<Record<LimitedRoute, RateLimitOptions<unknown>>>;
  /**
   * `POST /api/login`: the handler computes `key(request)`, awaits `limiter.take(key)` and answers
   * refusals with `sendRateLimited(…, decision, { headers })`, thrown errors with `sendError`.
   */
  login?: { limiter: Limiter; key: (request: unknown) => string; headers?: HeaderStyle };
  /**
   * A CORS layer before every limit that sets `Access-Control-Expose-Headers` to this value, as a
   * CORS middleware would: the adapter must add its names to this list, not replace it.
   */
  exposedByCors?: string;
  /**
   * `POST /api/outcome` behind this limit. Its handler first passes what the adapter put on the
   * request (Express `req.rateLimit`, Fastify `request.rateLimit`, Hono `c.get('rateLimit')`,
   * node `rateLimitOf(req)`) to `seen`, then answers as the request's `x-outcome` header says:
   * a status (`"200"`, `"401"`; `"200"` when absent) with the body `{"ok":true}`; `"throw"`: it
   * throws, and the framework's error handling answers 500; `"stall"`: it sends a 200 head and
   * part of a body and never ends it, and once that response has closed (the client went away)
   * calls `closed` on the next turn of the event loop, after the adapter's own listeners.
   */
  outcome?: {
    limit: RateLimitOptions<unknown>;
    seen?: (rateLimit: unknown) => void;
    closed?: () => void;
  };
}

/**
 * A response as the suite compares it: header names in lower case, the body as text.
 *
 * @example
 * const reply: HttpReply = { status: 429, headers: { 'retry-after': '30' }, body: '{"status":429}' };
 */
export interface HttpReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A running app, as {@link HttpHarness.start} returns it.
 *
 * @example
 * const reply = await app.request('POST', '/api/things', { 'x-client': 'c' });
 */
export interface RunningApp {
  request(method: string, path: string, headers?: Record<string, string>): Promise<HttpReply>;
  /**
   * Sends `POST path` with these headers, `Content-Type: text/plain`, a Content-Length it
   * never reaches and part of a body, and resolves with the response that arrives while the body
   * is still open. Real-socket harnesses write to a raw socket.
   */
  requestWithOpenBody(path: string, headers: Record<string, string>): Promise<HttpReply>;
  /**
   * Sends `POST path` with these headers on a real socket, reads the response head and part of
   * its body, and closes the connection before the body ends, as a client that goes away would.
   * Resolves once the socket is closed. Required when the harness sets `countOnly`.
   */
  abandon?(path: string, headers: Record<string, string>): Promise<void>;
  /**
   * Sends a whole `POST path` with these headers on a real socket and resolves at once with a
   * handle whose `leave()` closes the connection (before any response), resolving once it is
   * closed. Required when the harness sets `delays`.
   */
  leaving?(path: string, headers: Record<string, string>): Promise<{ leave(): Promise<void> }>;
  close(): Promise<void>;
}

/**
 * What an adapter supplies to run the suite: how to read a request header from its request
 * object, and how to start the app an {@link AppSpec} describes.
 *
 * @example
 * httpConformance({ name: 'koa', header: (ctx, name) => (ctx as Context).get(name) || undefined, start });
 */
export interface HttpHarness {
  /** Shown in test titles. */
  readonly name: string;
  /** Reads a request header from the framework's request object (lower-case name). */
  header(request: unknown, name: string): string | undefined;
  start(spec: AppSpec): Promise<RunningApp>;
  /**
   * True when the adapter finds the client address itself (from the socket, with `clientAddress`
   * and the route's `proxies`), so that `allow` and `deny` work without an `address` option; the
   * suite then sends X-Forwarded-For through the loopback peer. Otherwise the suite checks that a
   * list without `address` is refused at setup.
   * @default false
   */
  readonly findsClientAddress?: boolean;
  /**
   * True when the adapter puts the limit's outcome on the request and settles `countOnly` (and
   * releases a concurrency limit's lease) when the response closes: the app then serves
   * `POST /api/outcome` ({@link AppSpec.outcome}), the running app can
   * {@link RunningApp.abandon} a request, and the suite checks both.
   * @default false
   */
  readonly countOnly?: boolean;
  /**
   * True when the adapter serves `mode: "delay"` (passes the guard a signal that aborts when the
   * client goes away): the running app can then {@link RunningApp.leaving}, and the suite checks
   * delayed requests and a client that leaves while it waits.
   * @default false
   */
  readonly delays?: boolean;
}

/** The headers the suite compares; everything else is the framework's business. */
const RELEVANT = [
  'retry-after',
  'cache-control',
  'content-type',
  'ratelimit-policy',
  'ratelimit',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'access-control-expose-headers',
  'x-auth-mode',
];

interface Snapshot {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** Status, relevant headers and parsed body. A 200's Content-Type is the handler's, not ours. */
function snapshot(reply: HttpReply): Snapshot {
  const headers: Record<string, string> = {};
  for (const name of RELEVANT) {
    if (name === 'content-type' && reply.status < 300) continue;
    const value = reply.headers[name];
    if (value !== undefined) headers[name] = value;
  }
  let body: unknown = reply.body;
  try {
    body = JSON.parse(reply.body);
  } catch {
    // A handler's plain text stays text.
  }
  return { status: reply.status, headers, body };
}

const OK = { ok: true };
const PROBLEM = 'application/problem+json';
const DRAFT_EXPOSE = 'Retry-After, RateLimit, RateLimit-Policy';
/** The origin of the page the suite's requests come from, unless a test sends none. */
const ORIGIN = 'https://app.example';

/**
 * The app with every request sent as a browser sends it from a page on another origin: with an
 * `Origin` header (unless the test gives one), so that admitted responses list what they expose.
 */
function fromAnotherOrigin(app: RunningApp): RunningApp {
  const withOrigin = (headers: Record<string, string> = {}) => ({ origin: ORIGIN, ...headers });
  return {
    request: (method, path, headers) => app.request(method, path, withOrigin(headers)),
    requestWithOpenBody: (path, headers) => app.requestWithOpenBody(path, withOrigin(headers)),
    abandon:
      app.abandon === undefined ? undefined : (path, headers) => app.abandon!(path, withOrigin(headers)),
    leaving:
      app.leaving === undefined ? undefined : (path, headers) => app.leaving!(path, withOrigin(headers)),
    close: () => app.close(),
  };
}
const LEGACY_EXPOSE = 'Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset';
const START = Date.UTC(2026, 0, 1);

function problem429(retryAfter: number, limits: string[]) {
  return {
    type: 'about:blank',
    title: 'Too Many Requests',
    status: 429,
    detail: `Too many requests. Retry after ${retryAfter} seconds.`,
    code: 'rate_limited',
    limits,
  };
}

const errorBodies = {
  400: ['Bad Request', 'The request carries a value that cannot identify a client.', 'invalid_request'],
  401: ['Unauthorized', 'The offered credential was refused.', 'unauthorized'],
  500: ['Internal Server Error', 'An internal error occurred.', 'internal_error'],
  503: ['Service Unavailable', 'Rate limiting is unavailable; try again later.', 'rate_limit_unavailable'],
} as const;

const DENIED = {
  type: 'about:blank',
  title: 'Forbidden',
  status: 403,
  detail: 'Requests from this client are not accepted.',
  code: 'denied',
};

function problemError(status: keyof typeof errorBodies): Snapshot {
  const [title, detail, code] = errorBodies[status];
  return {
    status,
    headers: { 'content-type': PROBLEM, 'cache-control': 'no-store' },
    body: { type: 'about:blank', title, status, detail, code },
  };
}

/** Log lines, recorded so that the suite stays quiet and can check that no key reaches them. */
function recorder() {
  const lines: string[] = [];
  return {
    lines,
    logger: {
      warn: (details: Record<string, unknown>, message: string) => lines.push(inspect([message, details])),
    },
    onError: (error: unknown) => lines.push(inspect(error)),
  };
}

/**
 * Registers the HTTP conformance suite for one adapter, as `node:test` tests inside one
 * `describe` named after the harness. Call it at the top level of a test file run by
 * `node --test`.
 *
 * @example
 * import { httpConformance } from 'sluice/testing';
 * httpConformance({ name: 'my-framework', header: readHeader, start: startApp });
 */
export function httpConformance(harness: HttpHarness): void {
  const header = (request: unknown, name: string) => harness.header(request, name);

  describe(`http conformance: ${harness.name}`, () => {
    let clock: ManualClock;
    const quiet = recorder();

    function limiter(name: string, limit: number, extra: Partial<LimiterOptions> = {}): Limiter {
      return createLimiter({
        name,
        rule: tokenBucket({ limit, period: '1m' }),
        store: new MemoryStore(),
        clock,
        logger: quiet.logger,
        ...extra,
      });
    }

    /** Runs `run` with the app of `spec`, its requests sent as a page on another origin sends them. */
    async function withApp(spec: AppSpec, run: (app: RunningApp) => Promise<void>): Promise<void> {
      await withBareApp(spec, (app) => run(fromAnotherOrigin(app)));
    }

    /** Runs `run` with the app of `spec`, its requests sent with only the headers a test gives. */
    async function withBareApp(spec: AppSpec, run: (app: RunningApp) => Promise<void>): Promise<void> {
      const app = await harness.start(spec);
      try {
        await run(app);
      } finally {
        await app.close();
      }
    }

    async function post(app: RunningApp, path: string, headers?: Record<string, string>) {
      return snapshot(await app.request('POST', path, headers));
    }

    function reset() {
      clock = manualClock(START);
    }

    it('over the limit is a 429 problem+json with code rate_limited, the refusing limit, Retry-After and Cache-Control: no-store', async () => {
      reset();
      const things = limiter('things', 2);
      await withApp(
        { routes: { 'POST /api/things': { limits: things, key: () => 'client-1' } } },
        async (app) => {
          assert.deepEqual(await post(app, '/api/things'), {
            status: 200,
            headers: {
              'ratelimit-policy': '"things";q=2;w=60',
              ratelimit: '"things";r=1;t=30',
              'access-control-expose-headers': DRAFT_EXPOSE,
            },
            body: OK,
          });
          assert.equal((await post(app, '/api/things')).status, 200);
          assert.deepEqual(await post(app, '/api/things'), {
            status: 429,
            headers: {
              'content-type': PROBLEM,
              'cache-control': 'no-store',
              'ratelimit-policy': '"things";q=2;w=60',
              ratelimit: '"things";r=0;t=60',
              'retry-after': '30',
              'access-control-expose-headers': DRAFT_EXPOSE,
            },
            body: problem429(30, ['things']),
          });
        },
      );
    });

    it('Retry-After is whole seconds rounded up, at least 1, and the request succeeds once it has passed', async () => {
      reset();
      const things = limiter('things', 2);
      await withApp(
        { routes: { 'POST /api/things': { limits: things, key: () => 'client-1' } } },
        async (app) => {
          await post(app, '/api/things');
          await post(app, '/api/things');
          clock.advance(29_500);
          const refused = await post(app, '/api/things');
          assert.equal(refused.status, 429);
          assert.equal(refused.headers['retry-after'], '1', '0.5 s left is announced as 1 s, never 0');
          assert.deepEqual(refused.body, problem429(1, ['things']));
          clock.advance(500);
          assert.equal((await post(app, '/api/things')).status, 200);
        },
      );
    });

    it('a request without an Origin header is admitted without Access-Control-Expose-Headers; its refusal keeps the list', async () => {
      reset();
      await withBareApp(
        { routes: { 'POST /api/things': { limits: limiter('things', 1), key: () => 'k' } } },
        async (app) => {
          const admitted = await app.request('POST', '/api/things');
          assert.equal(admitted.status, 200);
          assert.equal(admitted.headers['ratelimit'], '"things";r=0;t=60');
          assert.equal(admitted.headers['access-control-expose-headers'], undefined);
          const refused = await app.request('POST', '/api/things');
          assert.equal(refused.status, 429);
          assert.equal(refused.headers['access-control-expose-headers'], DRAFT_EXPOSE);
          const fromPage = await app.request('POST', '/api/things', { origin: ORIGIN });
          assert.equal(fromPage.headers['access-control-expose-headers'], DRAFT_EXPOSE);
        },
      );
    });

    it('Access-Control-Expose-Headers lists Retry-After and the rate-limit headers, merged with what a CORS layer exposed', async () => {
      reset();
      const things = limiter('things', 1);
      const spec: AppSpec = {
        exposedByCors: 'X-Request-Id',
        routes: { 'POST /api/things': { limits: things, key: () => 'client-1' } },
      };
      await withApp(spec, async (app) => {
        const merged = `X-Request-Id, ${DRAFT_EXPOSE}`;
        const admitted = await post(app, '/api/things');
        assert.equal(admitted.status, 200);
        assert.equal(admitted.headers['access-control-expose-headers'], merged);
        const refused = await post(app, '/api/things');
        assert.equal(refused.status, 429);
        assert.equal(refused.headers['access-control-expose-headers'], merged);
      });
    });

    it('headers "none" send only Retry-After on a refusal', async () => {
      reset();
      const things = limiter('things', 1);
      const spec: AppSpec = {
        routes: { 'POST /api/things': { limits: things, key: () => 'k', headers: 'none' } },
      };
      await withApp(spec, async (app) => {
        assert.deepEqual(await post(app, '/api/things'), { status: 200, headers: {}, body: OK });
        assert.deepEqual(await post(app, '/api/things'), {
          status: 429,
          headers: {
            'content-type': PROBLEM,
            'cache-control': 'no-store',
            'retry-after': '60',
            'access-control-expose-headers': 'Retry-After',
          },
          body: problem429(60, ['things']),
        });
      });
    });

    it('headers "legacy" describe the bucket that decided (the narrowest admitting, then the refusing one)', async () => {
      reset();
      const wide = limiter('wide', 10);
      const narrow = limiter('narrow', 2);
      const spec: AppSpec = {
        routes: { 'POST /api/things': { limits: [wide, narrow], key: () => 'k', headers: 'legacy' } },
      };
      await withApp(spec, async (app) => {
        assert.deepEqual(await post(app, '/api/things'), {
          status: 200,
          headers: {
            'x-ratelimit-limit': '2',
            'x-ratelimit-remaining': '1',
            'x-ratelimit-reset': '30',
            'access-control-expose-headers': LEGACY_EXPOSE,
          },
          body: OK,
        });
        await post(app, '/api/things');
        assert.deepEqual(await post(app, '/api/things'), {
          status: 429,
          headers: {
            'content-type': PROBLEM,
            'cache-control': 'no-store',
            'x-ratelimit-limit': '2',
            'x-ratelimit-remaining': '0',
            'x-ratelimit-reset': '60',
            'retry-after': '30',
            'access-control-expose-headers': LEGACY_EXPOSE,
          },
          body: problem429(30, ['narrow']),
        });
      });
    });

    it('headers "draft" carry one RateLimit-Policy and RateLimit member per limit of a cascade', async () => {
      reset();
      const wide = limiter('wide', 10);
      const narrow = limiter('narrow', 3);
      const spec: AppSpec = { routes: { 'POST /api/things': { limits: [wide, narrow], key: () => 'k' } } };
      await withApp(spec, async (app) => {
        assert.deepEqual(await post(app, '/api/things'), {
          status: 200,
          headers: {
            'ratelimit-policy': '"wide";q=10;w=60, "narrow";q=3;w=60',
            ratelimit: '"wide";r=9;t=6, "narrow";r=2;t=20',
            'access-control-expose-headers': DRAFT_EXPOSE,
          },
          body: OK,
        });
      });
    });

    it('a cascade runs wide to narrow; the first refusal stops it and later limits are not charged', async () => {
      reset();
      const wide = limiter('wide', 2);
      const narrow = limiter('narrow', 5);
      const spec: AppSpec = { routes: { 'POST /api/things': { limits: [wide, narrow], key: () => 'same' } } };
      await withApp(spec, async (app) => {
        await post(app, '/api/things');
        await post(app, '/api/things');
        assert.deepEqual(await post(app, '/api/things'), {
          status: 429,
          headers: {
            'content-type': PROBLEM,
            'cache-control': 'no-store',
            // Only the limit that was asked and refused: the narrow one was never reached.
            'ratelimit-policy': '"wide";q=2;w=60',
            ratelimit: '"wide";r=0;t=60',
            'retry-after': '30',
            'access-control-expose-headers': DRAFT_EXPOSE,
          },
          body: problem429(30, ['wide']),
        });
        assert.equal((await narrow.peek('same')).remaining, 3, 'narrow charged twice, not three times');
        assert.equal((await wide.peek('same')).remaining, 0, 'each limit keeps its own counter');
      });
    });

    it('a limit in shadow mode never refuses and sends no headers; its would-be refusals are reported; the enforcing limit after it still decides', async () => {
      reset();
      const events = new DecisionEvents();
      const seen: string[] = [];
      events.subscribe((event) => void seen.push(`${event.rule}:${event.outcome}`));
      const trial = limiter('trial', 1, { mode: 'shadow', events });
      const enforced = limiter('enforced', 3, { events });
      const spec: AppSpec = {
        routes: { 'POST /api/things': { limits: [trial, enforced], key: () => 'same' } },
      };
      await withApp(spec, async (app) => {
        const first = await post(app, '/api/things');
        assert.equal(first.status, 200);
        assert.equal(
          first.headers['ratelimit-policy'],
          '"enforced";q=3;w=60',
          'the shadow limit is invisible',
        );
        assert.equal((await post(app, '/api/things')).status, 200, 'the shadow limit would have refused');
        assert.equal((await post(app, '/api/things')).status, 200);
        const refused = await post(app, '/api/things');
        assert.equal(refused.status, 429);
        assert.equal(refused.headers['ratelimit-policy'], '"enforced";q=3;w=60');
        assert.deepEqual((refused.body as { limits?: unknown }).limits, ['enforced']);
      });
      assert.deepEqual(seen, [
        'trial:admitted',
        'enforced:admitted',
        'trial:shadow-refused',
        'enforced:admitted',
        'trial:shadow-refused',
        'enforced:admitted',
        'trial:shadow-refused',
        'enforced:refused',
      ]);
      assert.equal((await trial.peek('same')).remaining, 0, 'charged as enforcement would have been');
    });

    it('reads are not charged to a write budget, and an excluded route is left to its own rule', async () => {
      reset();
      const writes = limiter('writes', 1);
      const messages = limiter('messages', 5);
      const spec: AppSpec = {
        everyRoute: {
          limits: writes,
          key: () => 'user-1',
          methods: ['post', 'PUT', 'PATCH', 'DELETE'],
          exclude: ['POST /api/messages'],
        },
        routes: { 'POST /api/messages': { limits: messages, key: () => 'user-1' } },
      };
      await withApp(spec, async (app) => {
        for (const path of ['/api/things', '/api/things?page=2', '/api/things']) {
          assert.deepEqual(snapshot(await app.request('GET', path)), { status: 200, headers: {}, body: OK });
        }
        for (const path of ['/api/messages', '/api/messages?draft=1']) {
          const sent = await post(app, path);
          assert.equal(sent.status, 200);
          assert.equal(sent.headers['ratelimit-policy'], '"messages";q=5;w=60');
        }
        assert.equal((await writes.peek('user-1')).remaining, 1, 'neither reads nor messages were charged');
        assert.equal((await messages.peek('user-1')).remaining, 3);
        assert.equal((await post(app, '/api/things')).headers['ratelimit-policy'], '"writes";q=1;w=60');
        assert.deepEqual((await post(app, '/api/things')).body, problem429(60, ['writes']));
      });
    });

    it('two requests with the same Idempotency-Key both consume', async () => {
      reset();
      const things = limiter('things', 5);
      await withApp({ routes: { 'POST /api/things': { limits: things, key: () => 'k' } } }, async (app) => {
        const replay = { 'idempotency-key': 'order-42' };
        assert.equal((await post(app, '/api/things', replay)).headers.ratelimit, '"things";r=4;t=12');
        assert.equal((await post(app, '/api/things', replay)).headers.ratelimit, '"things";r=3;t=24');
        assert.equal((await things.peek('k')).remaining, 3);
      });
    });

    it('a key that is not a string is a 400, a missing key a 500 — never a 429, never a pass, nothing consumed', async () => {
      reset();
      const things = limiter('things', 2);
      const errors: unknown[] = [];
      const key = (request: unknown): KeyResult | undefined => {
        const value = header(request, 'x-case');
        if (value === 'invalid') throw new SluiceError('SLUICE_KEY_INVALID', 'login must be a string');
        if (value === 'number') return 42 as unknown as string;
        if (value === 'missing') return undefined;
        return 'k';
      };
      const spec: AppSpec = {
        routes: { 'POST /api/things': { limits: things, key, onError: (e) => errors.push(e) } },
      };
      await withApp(spec, async (app) => {
        assert.deepEqual(await post(app, '/api/things', { 'x-case': 'invalid' }), problemError(400));
        assert.deepEqual(await post(app, '/api/things', { 'x-case': 'number' }), problemError(400));
        assert.deepEqual(await post(app, '/api/things', { 'x-case': 'missing' }), problemError(500));
        assert.equal(errors.length, 1, 'only the 500 is reported to onError');
        assert.ok(isSluiceError(errors[0], 'SLUICE_KEY_MISSING'));
        assert.equal((await things.peek('k')).remaining, 2, 'nothing was consumed');
      });
    });

    it('a key spec with authMode sends X-Auth-Mode on 200 and 429; a refused credential is a 401 that charges nothing', async () => {
      reset();
      const api = limiter('api', 1);
      const key = (request: unknown): KeyResult => {
        const offered = header(request, 'x-api-key');
        if (offered === 'revoked') throw new SluiceError('SLUICE_UNAUTHORIZED', 'the API key was revoked');
        if (offered === 'good') return { key: 'apikey:7', authMode: 'key' };
        return { key: 'anon:127.0.0.1', authMode: 'anon' };
      };
      await withApp({ routes: { 'POST /api/things': { limits: api, key } } }, async (app) => {
        const expose = `${DRAFT_EXPOSE}, X-Auth-Mode`;
        assert.deepEqual(await post(app, '/api/things', { 'x-api-key': 'good' }), {
          status: 200,
          headers: {
            'ratelimit-policy': '"api";q=1;w=60',
            ratelimit: '"api";r=0;t=60',
            'x-auth-mode': 'key',
            'access-control-expose-headers': expose,
          },
          body: OK,
        });
        assert.deepEqual(await post(app, '/api/things', { 'x-api-key': 'good' }), {
          status: 429,
          headers: {
            'content-type': PROBLEM,
            'cache-control': 'no-store',
            'ratelimit-policy': '"api";q=1;w=60',
            ratelimit: '"api";r=0;t=60',
            'x-auth-mode': 'key',
            'retry-after': '60',
            'access-control-expose-headers': expose,
          },
          body: problem429(60, ['api']),
        });
        const anon = await post(app, '/api/things');
        assert.equal(anon.status, 200, 'exactly the chosen bucket is charged: the anonymous one is fresh');
        assert.equal(anon.headers['x-auth-mode'], 'anon');
        assert.deepEqual(await post(app, '/api/things', { 'x-api-key': 'revoked' }), problemError(401));
      });
    });

    it('a failing store is a 503 under the default closed policy (never a 429), or 500 with closedStatus 500', async () => {
      reset();
      const store = new FailingStore();
      const closed = limiter('closed', 1, { store });
      const closed500 = limiter('closed500', 1, { store, closedStatus: 500 });
      const spec: AppSpec = {
        routes: {
          'POST /api/things': { limits: closed, key: () => 'k' },
          'POST /api/messages': { limits: closed500, key: () => 'k', onError: quiet.onError },
        },
      };
      await withApp(spec, async (app) => {
        store.mode = 'reject';
        for (let i = 0; i < 3; i++) assert.deepEqual(await post(app, '/api/things'), problemError(503));
        assert.deepEqual(await post(app, '/api/messages'), problemError(500));
        store.mode = 'ok';
        assert.equal((await post(app, '/api/things')).status, 200, 'the store decides again once it answers');
      });
    });

    it('a hung store is a 503 once the limit\'s timeout ("20ms") has passed', async () => {
      reset();
      const store = new FailingStore();
      const hung = limiter('hung', 1, { store, timeout: '20ms' });
      await withApp({ routes: { 'POST /api/things': { limits: hung, key: () => 'k' } } }, async (app) => {
        store.mode = 'hang';
        assert.deepEqual(await post(app, '/api/things'), problemError(503));
        assert.equal(hung.stats().timeouts, 1);
      });
    });

    it('failure "open" admits without rate-limit or expose headers (no bucket decided)', async () => {
      reset();
      const store = new FailingStore();
      const comfort = limiter('comfort', 1, { store, failure: 'open' });
      await withApp({ routes: { 'POST /api/things': { limits: comfort, key: () => 'k' } } }, async (app) => {
        store.mode = 'reject';
        for (let i = 0; i < 3; i++) {
          assert.deepEqual(await post(app, '/api/things'), { status: 200, headers: {}, body: OK });
        }
        assert.equal(comfort.stats().failOpenAdmits, 3);
      });
    });

    it('a handler that takes itself answers with sendRateLimited (429) and sendError (503) like the middleware', async () => {
      reset();
      const store = new FailingStore();
      const login = limiter('login', 1, { store });
      const spec: AppSpec = {
        login: { limiter: login, key: (request) => `login:${header(request, 'x-login')}` },
      };
      await withApp(spec, async (app) => {
        const who = { 'x-login': 'alice' };
        assert.equal((await post(app, '/api/login', who)).status, 200);
        assert.deepEqual(await post(app, '/api/login', who), {
          status: 429,
          headers: {
            'content-type': PROBLEM,
            'cache-control': 'no-store',
            'ratelimit-policy': '"login";q=1;w=60',
            ratelimit: '"login";r=0;t=60',
            'retry-after': '60',
            'access-control-expose-headers': DRAFT_EXPOSE,
          },
          body: problem429(60, ['login']),
        });
        store.mode = 'reject';
        assert.deepEqual(await post(app, '/api/login', who), problemError(503));
      });
    });

    it('sendRateLimited takes the header style', async () => {
      reset();
      const login = limiter('login', 1);
      const spec: AppSpec = { login: { limiter: login, key: () => 'k', headers: 'legacy' } };
      await withApp(spec, async (app) => {
        await post(app, '/api/login');
        const refused = await post(app, '/api/login');
        assert.equal(refused.status, 429);
        assert.equal(refused.headers['x-ratelimit-limit'], '1');
        assert.equal(refused.headers['ratelimit'], undefined);
        assert.equal(refused.headers['access-control-expose-headers'], LEGACY_EXPOSE);
      });
    });

    it('the limit answers before the body is read: a POST whose body never finishes still gets its 429', async () => {
      reset();
      const things = limiter('things', 1);
      const key = (request: unknown) => `client:${header(request, 'x-client')}`;
      await withApp({ routes: { 'POST /api/things': { limits: things, key } } }, async (app) => {
        assert.equal((await post(app, '/api/things', { 'x-client': 'c' })).status, 200);
        const refused = snapshot(await app.requestWithOpenBody('/api/things', { 'x-client': 'c' }));
        assert.equal(refused.status, 429);
        assert.deepEqual(refused.body, problem429(60, ['things']));
      });
    });

    it('no response path throws: numbers beyond a header field are clamped, an authMode that is not a token and a throwing onError give problem responses, and no promise is left rejected', async () => {
      reset();
      const rejections: unknown[] = [];
      const recordRejection = (reason: unknown) => void rejections.push(reason);
      process.on('unhandledRejection', recordRejection);
      try {
        const counted = limiter('huge', 5);
        // A limit that reports more than 15 digits and an endless reset: the header writer must cope.
        const huge = {
          name: 'huge',
          rule: counted.rule,
          clock,
          take: async (key: string) => ({
            ...(await counted.take(key)),
            limit: 1e16,
            capacity: 1e16,
            remaining: 1e16 - 1,
            resetMs: Infinity,
          }),
        } as unknown as Limiter;
        const reported: unknown[] = [];
        const spec: AppSpec = {
          routes: {
            'POST /api/things': { limits: huge, key: () => 'k' },
            'POST /api/messages': {
              limits: limiter('modes', 5),
              key: () => ({ key: 'k', authMode: 'anon\r\nX-Injected: 1' }),
              onError: (error) => {
                reported.push(error);
                throw new Error('the logger is down');
              },
            },
          },
        };
        await withApp(spec, async (app) => {
          assert.deepEqual(await post(app, '/api/things'), {
            status: 200,
            headers: {
              'ratelimit-policy': '"huge";q=999999999999999;w=60',
              ratelimit: '"huge";r=999999999999999;t=999999999999999',
              'access-control-expose-headers': DRAFT_EXPOSE,
            },
            body: OK,
          });
          const injected = await app.request('POST', '/api/messages');
          assert.deepEqual(snapshot(injected), problemError(500));
          assert.equal(injected.headers['x-injected'], undefined);
          assert.equal(reported.length, 1);
          assert.ok(isSluiceError(reported[0], 'SLUICE_CONFIG'));
          assert.doesNotMatch((reported[0] as Error).message, /Injected|\r/, 'the value is not echoed');
        });
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual(rejections, []);
      } finally {
        process.off('unhandledRejection', recordRejection);
      }
    });

    it('an overloaded store answers 503 with Retry-After: 1, readable cross-origin', async () => {
      reset();
      const things = limiter('things', 5);
      const overloaded = () => {
        throw new SluiceError('SLUICE_STORE_OVERLOADED', 'the store queue is full');
      };
      await withApp({ routes: { 'POST /api/things': { limits: things, key: overloaded } } }, async (app) => {
        const expected = problemError(503);
        expected.headers['retry-after'] = '1';
        expected.headers['access-control-expose-headers'] = 'Retry-After';
        assert.deepEqual(await post(app, '/api/things'), expected);
      });
    });

    it('exclude matches the full path under a mount point, in every spelling that routes alike', async () => {
      reset();
      const writes = limiter('writes', 10);
      const messages = limiter('messages', 10);
      const spec: AppSpec = {
        everyRoute: {
          limits: writes,
          key: () => 'user-1',
          methods: ['POST'],
          exclude: ['POST /api/messages'],
        },
        everyRouteMount: '/api',
        routes: { 'POST /api/messages': { limits: messages, key: () => 'user-1' } },
      };
      await withApp(spec, async (app) => {
        const sent = await post(app, '/api/messages');
        assert.equal(sent.status, 200);
        assert.equal(sent.headers['ratelimit-policy'], '"messages";q=10;w=60', 'only its own limit');
        for (const path of ['/api/messages/', '/api//messages', '/api/%6Dessages', '/API/Messages?x=1']) {
          await app.request('POST', path);
        }
        assert.equal(
          (await writes.peek('user-1')).remaining,
          10,
          'no spelling of the excluded route was charged',
        );
        assert.equal((await post(app, '/api/things')).headers['ratelimit-policy'], '"writes";q=10;w=60');
        assert.equal((await writes.peek('user-1')).remaining, 9, 'a route under the mount point is charged');
      });
    });

    it('HEAD follows GET, and "GET /health/*" leaves out /health and everything below it', async () => {
      reset();
      const reads = limiter('reads', 1);
      const spec: AppSpec = {
        everyRoute: { limits: reads, key: () => 'client-1', exclude: ['GET /health/*'] },
      };
      await withApp(spec, async (app) => {
        for (const method of ['GET', 'HEAD']) {
          for (const path of ['/health', '/health/', '/health/live', '/%68ealth/live']) {
            const reply = await app.request(method, path);
            assert.notEqual(reply.status, 429, `${method} ${path}`);
            assert.equal(reply.headers['ratelimit'], undefined, `${method} ${path} is not limited`);
          }
        }
        assert.equal((await reads.peek('client-1')).remaining, 1, 'no health check was charged');
        assert.equal((await app.request('GET', '/api/things')).status, 200);
        assert.equal((await app.request('HEAD', '/api/things')).status, 429, 'other routes are limited');
      });
    });

    it('CORS preflights are not charged, unless chargePreflight is true', async () => {
      for (const chargePreflight of [false, true]) {
        reset();
        const api = limiter('api', 1);
        const spec: AppSpec = { everyRoute: { limits: api, key: () => 'client-1', chargePreflight } };
        await withApp(spec, async (app) => {
          const preflight = {
            origin: 'https://app.example',
            'access-control-request-method': 'POST',
          };
          const statuses = [];
          for (let i = 0; i < 2; i++)
            statuses.push((await app.request('OPTIONS', '/api/things', preflight)).status);
          if (chargePreflight) {
            assert.equal(statuses[1], 429, 'charged when asked to');
          } else {
            assert.ok(!statuses.includes(429), 'preflights pass uncharged');
            assert.equal((await api.peek('client-1')).remaining, 1);
            assert.equal((await post(app, '/api/things')).status, 200, 'the request itself is charged');
          }
        });
      }
    });

    it('a request that passes the same limit twice (mounted twice, and again on the route) is charged once', async () => {
      reset();
      const api = limiter('api', 5);
      const spec: AppSpec = {
        everyRoute: { limits: api, key: () => 'client-1' },
        everyRouteTwice: true,
        routes: { 'POST /api/things': { limits: api, key: () => 'client-1' } },
      };
      await withApp(spec, async (app) => {
        assert.deepEqual(await post(app, '/api/things'), {
          status: 200,
          headers: {
            'ratelimit-policy': '"api";q=5;w=60',
            ratelimit: '"api";r=4;t=12',
            'access-control-expose-headers': DRAFT_EXPOSE,
          },
          body: OK,
        });
        assert.equal((await api.peek('client-1')).remaining, 4);
      });
    });

    it("onError hears of a limit's failures at most once a minute, with how many there were", async () => {
      reset();
      const store = new FailingStore();
      const failing = limiter('failing', 5, { store, closedStatus: 500 });
      const reports: [unknown, unknown][] = [];
      const spec: AppSpec = {
        routes: {
          'POST /api/things': {
            limits: failing,
            key: () => 'k',
            onError: (error, details) => void reports.push([error, details]),
          },
        },
      };
      await withApp(spec, async (app) => {
        store.mode = 'reject';
        for (let i = 0; i < 4; i++) assert.deepEqual(await post(app, '/api/things'), problemError(500));
        assert.equal(reports.length, 1, 'one report for the first failure, none for the next ones');
        assert.deepEqual(reports[0]![1], { failures: 1 });
        clock.advance(60_000);
        assert.deepEqual(await post(app, '/api/things'), problemError(500));
        assert.equal(reports.length, 2);
        assert.deepEqual(reports[1]![1], { failures: 4 }, 'the three held back and this one');
        assert.ok(isSluiceError(reports[1]![0], 'SLUICE_STORE_UNAVAILABLE'));
      });
    });

    /** A limit on a store that counts its calls, and a key function that counts its own. */
    function counted(name: string) {
      const store = new FailingStore();
      const seen = { keys: 0 };
      const key = () => {
        seen.keys++;
        return 'client';
      };
      return { limits: limiter(name, 5, { store }), key, store, seen };
    }

    /** The client address as the test sends it; every adapter can read a header. */
    const addressHeader = (request: unknown) => header(request, 'x-client-address');

    it('deny answers 403 problem+json with code denied before the key and the store; allow passes uncharged; deny wins over allow', async () => {
      reset();
      const things = counted('things');
      const messages = counted('messages');
      const lists = { deny: ['203.0.113.0/24', '2001:db8:bad::/48'], allow: ['10.0.0.0/8', '203.0.113.5'] };
      const spec: AppSpec = {
        routes: {
          'POST /api/things': { limits: things.limits, key: things.key, address: addressHeader, ...lists },
          'POST /api/messages': {
            limits: messages.limits,
            key: messages.key,
            address: addressHeader,
            cacheControl: 'private, no-store',
            ...lists,
          },
        },
      };
      await withApp(spec, async (app) => {
        const denied = {
          status: 403,
          headers: { 'content-type': PROBLEM, 'cache-control': 'no-store' },
          body: DENIED,
        };
        for (const address of ['203.0.113.7', '203.0.113.5', '2001:db8:bad::1', '::ffff:203.0.113.9'])
          assert.deepEqual(await post(app, '/api/things', { 'x-client-address': address }), denied, address);
        assert.deepEqual(await post(app, '/api/messages', { 'x-client-address': '203.0.113.7' }), {
          ...denied,
          headers: { 'content-type': PROBLEM, 'cache-control': 'private, no-store' },
        });
        for (const address of ['10.1.2.3', '::ffff:10.0.0.1']) {
          assert.deepEqual(await post(app, '/api/things', { 'x-client-address': address }), {
            status: 200,
            headers: {},
            body: OK,
          });
        }
        assert.equal(things.seen.keys + things.store.calls + messages.seen.keys + messages.store.calls, 0);
        const other = await post(app, '/api/things', { 'x-client-address': '198.51.100.1' });
        assert.equal(other.headers['ratelimit'], '"things";r=4;t=12', 'a client on neither list is charged');
        assert.equal(things.store.calls, 1);
      });
    });

    it('skip (sync or async) lets a request through untouched; a skip that throws limits it and is reported', async () => {
      reset();
      const things = counted('things');
      const messages = counted('messages');
      const reported: unknown[] = [];
      const spec: AppSpec = {
        routes: {
          'POST /api/things': {
            limits: things.limits,
            key: things.key,
            skip: (request) => header(request, 'x-skip') === 'yes',
          },
          'POST /api/messages': {
            limits: messages.limits,
            key: messages.key,
            skip: async (request) => {
              if (header(request, 'x-skip') === 'broken') throw new Error('the skip failed');
              return header(request, 'x-skip') === 'yes';
            },
            onError: (error) => void reported.push(error),
          },
        },
      };
      await withApp(spec, async (app) => {
        for (const path of ['/api/things', '/api/messages'])
          assert.deepEqual(await post(app, path, { 'x-skip': 'yes' }), {
            status: 200,
            headers: {},
            body: OK,
          });
        assert.equal(things.seen.keys + things.store.calls + messages.seen.keys + messages.store.calls, 0);
        assert.equal(
          (await post(app, '/api/things', { 'x-skip': 'no' })).headers['ratelimit'],
          '"things";r=4;t=12',
        );
        for (let i = 0; i < 2; i++)
          assert.equal((await post(app, '/api/messages', { 'x-skip': 'broken' })).status, 200);
        assert.equal(messages.store.calls, 2, 'a failed skip is no skip: both requests were charged');
        assert.equal(reported.length, 1, 'reported once a minute');
      });
    });

    if (harness.findsClientAddress === true) {
      it('without an address option, lists match the client address found behind the proxies (clientAddress)', async () => {
        reset();
        const things = counted('things');
        const messages = counted('messages');
        const spec: AppSpec = {
          routes: {
            // The default proxies: a proxy on this machine, which writes X-Forwarded-For.
            'POST /api/things': {
              limits: things.limits,
              key: things.key,
              deny: ['203.0.113.7'],
              allow: ['10.0.0.0/8'],
            },
            'POST /api/messages': {
              limits: messages.limits,
              key: messages.key,
              deny: ['203.0.113.7'],
              proxies: { header: 'x-real-ip' },
            },
          },
        };
        await withApp(spec, async (app) => {
          assert.equal((await post(app, '/api/things', { 'x-forwarded-for': '203.0.113.7' })).status, 403);
          assert.deepEqual(
            await post(app, '/api/things', { 'x-forwarded-for': '203.0.113.7, 10.0.0.2' }),
            {
              status: 200,
              headers: {},
              body: OK,
            },
            'the rightmost entry not trusted is the client: 10.0.0.2, allowed',
          );
          assert.equal(things.store.calls, 0);
          assert.equal((await post(app, '/api/things', { 'x-forwarded-for': '198.51.100.1' })).status, 200);
          assert.equal(things.store.calls, 1);
          assert.equal((await post(app, '/api/messages', { 'x-real-ip': '203.0.113.7' })).status, 403);
          const notRead = await post(app, '/api/messages', { 'x-forwarded-for': '203.0.113.7' });
          assert.equal(notRead.status, 200, 'with header x-real-ip, X-Forwarded-For is not read');
        });
      });
    } else {
      it('a list without an address option is refused at setup: there is no socket to read it from', async () => {
        reset();
        const spec: AppSpec = {
          routes: {
            'POST /api/things': { limits: limiter('things', 5), key: () => 'k', deny: ['203.0.113.7'] },
          },
        };
        await assert.rejects(
          async () => (await harness.start(spec)).close(),
          (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && /rateLimit address/.test(e.message),
        );
      });
    }

    if (harness.countOnly === true) {
      /** The statuses of `POST /api/outcome` answered as each `x-outcome` asks, in order. */
      async function outcomes(app: RunningApp, asks: readonly string[]): Promise<number[]> {
        const statuses: number[] = [];
        for (const ask of asks)
          statuses.push((await app.request('POST', '/api/outcome', { 'x-outcome': ask })).status);
        return statuses;
      }

      it('countOnly "failed": a client answered 200 is never limited; one answered 401 is refused exactly at the limit', async () => {
        reset();
        const logins = limiter('logins', 2);
        const spec: AppSpec = {
          outcome: { limit: { limits: logins, key: () => 'client-1', countOnly: 'failed' } },
        };
        await withApp(spec, async (app) => {
          assert.deepEqual(
            await outcomes(app, ['200', '200', '201', '302', '200']),
            [200, 200, 201, 302, 200],
          );
          assert.equal((await logins.peek('client-1')).remaining, 2, 'every success was refunded');
          assert.deepEqual(await outcomes(app, ['401', '401', '401', '200']), [401, 401, 429, 429]);
          assert.equal((await logins.peek('client-1')).remaining, 0);
        });
      });

      it('countOnly "succeeded": a client answered 401 is never limited; one answered 200 is refused exactly at the limit', async () => {
        reset();
        const exports = limiter('exports', 2);
        const spec: AppSpec = {
          outcome: { limit: { limits: exports, key: () => 'client-1', countOnly: 'succeeded' } },
        };
        await withApp(spec, async (app) => {
          assert.deepEqual(await outcomes(app, ['401', '404', '500', '401']), [401, 404, 500, 401]);
          assert.equal((await exports.peek('client-1')).remaining, 2, 'every failure was refunded');
          assert.deepEqual(await outcomes(app, ['200', '399', '200', '401']), [200, 399, 429, 429]);
          assert.equal((await exports.peek('client-1')).remaining, 0);
        });
      });

      it('countOnly "failed": a handler that throws (the framework answers 500) counts', async () => {
        reset();
        const calls = limiter('calls', 2);
        const spec: AppSpec = {
          outcome: { limit: { limits: calls, key: () => 'client-1', countOnly: 'failed' } },
        };
        await withApp(spec, async (app) => {
          assert.deepEqual(await outcomes(app, ['throw', 'throw', 'throw']), [500, 500, 429]);
        });
      });

      it('countOnly: a client that goes away before the body ends is settled as failed, whatever the status already sent, and leaves no unhandled rejection', async () => {
        const rejections: unknown[] = [];
        const recordRejection = (reason: unknown) => void rejections.push(reason);
        process.on('unhandledRejection', recordRejection);
        try {
          for (const countOnly of ['failed', 'succeeded'] as const) {
            reset();
            const downloads = limiter('downloads', 3);
            let closed!: () => void;
            const settled = new Promise<void>((resolve) => (closed = resolve));
            const spec: AppSpec = {
              outcome: { limit: { limits: downloads, key: () => 'client-1', countOnly }, closed },
            };
            await withApp(spec, async (app) => {
              await app.abandon!('/api/outcome', { 'x-outcome': 'stall' });
              await settled;
              // The 200 head went out, but the response never completed: a failed request.
              assert.equal(
                (await downloads.peek('client-1')).remaining,
                countOnly === 'failed' ? 2 : 3,
                `countOnly ${countOnly}`,
              );
            });
          }
          await new Promise((resolve) => setImmediate(resolve));
          assert.deepEqual(rejections, []);
        } finally {
          process.off('unhandledRejection', recordRejection);
        }
      });

      it('an admitted request carries the decisions of its limits, and with countOnly the receipts', async () => {
        reset();
        const wide = limiter('wide', 5);
        const narrow = limiter('narrow', 3);
        for (const countOnly of [undefined, 'failed'] as const) {
          const seen: unknown[] = [];
          const spec: AppSpec = {
            outcome: {
              limit: { limits: [wide, narrow], key: () => 'client-1', ...(countOnly && { countOnly }) },
              seen: (rateLimit) => void seen.push(rateLimit),
            },
          };
          await withApp(spec, async (app) => {
            assert.deepEqual(await outcomes(app, ['401']), [401]);
          });
          assert.equal(seen.length, 1);
          const { decisions, receipts } = seen[0] as RequestRateLimit;
          assert.deepEqual(
            decisions.map((d) => [d.name, d.allowed, d.remaining]),
            countOnly === undefined
              ? [
                  ['wide', true, 4],
                  ['narrow', true, 2],
                ]
              : [
                  ['wide', true, 3],
                  ['narrow', true, 1],
                ],
          );
          assert.deepEqual(
            receipts.map((r) => [r.rule, r.cost]),
            countOnly === undefined
              ? []
              : [
                  ['wide', 1],
                  ['narrow', 1],
                ],
          );
        }
      });

      httpLeaseCases({
        reset: () => {
          reset();
          return clock;
        },
        limiter,
        withApp,
      });
    }

    if (harness.delays === true) {
      it('mode "delay": a request over the limit waits for its slot instead of a 429; beyond maxWait it is a 429 at once, and the other limits give their charge back', async () => {
        reset();
        const wide = limiter('wide', 10);
        // One a 30 ms: the second request waits 30 ms of real time (the clock stands still, so the
        // waits are computed exactly; only the timers run).
        const narrow = createLimiter({
          name: 'narrow',
          rule: tokenBucket({ limit: 1, period: '30ms' }),
          store: new MemoryStore(),
          clock,
        });
        const spec: AppSpec = {
          routes: {
            'POST /api/things': {
              limits: [wide, narrow],
              key: () => 'client-1',
              mode: 'delay',
              maxWait: '50ms',
            },
          },
        };
        await withApp(spec, async (app) => {
          const first = await post(app, '/api/things');
          const second = await post(app, '/api/things');
          const third = await post(app, '/api/things');
          assert.deepEqual([first.status, first.body], [200, OK]);
          assert.deepEqual([second.status, second.body], [200, OK]);
          assert.equal(third.status, 429);
          assert.equal(third.headers['retry-after'], '1');
          assert.deepEqual((third.body as { limits: string[] }).limits, ['narrow']);
          assert.equal(
            (await wide.peek('client-1')).remaining,
            8,
            'the refused request gave its charge back',
          );
        });
      });

      it('mode "delay": a client that goes away while it waits gives its slot back, and no promise is left rejected', async () => {
        const rejections: unknown[] = [];
        const recordRejection = (reason: unknown) => void rejections.push(reason);
        process.on('unhandledRejection', recordRejection);
        try {
          reset();
          const slow = limiter('slow', 1);
          let reserved!: () => void;
          const waiting = new Promise<void>((resolve) => (reserved = resolve));
          let events = 0;
          slow.events.subscribe(() => {
            if (++events === 2) reserved();
          });
          const spec: AppSpec = {
            routes: {
              'POST /api/things': { limits: slow, key: () => 'client-1', mode: 'delay', maxWait: '5m' },
            },
          };
          await withApp(spec, async (app) => {
            assert.equal((await post(app, '/api/things')).status, 200);
            const client = await app.leaving!('/api/things', {});
            await waiting; // reserved: the slot a minute away is held
            assert.equal((await slow.peek('client-1')).retryAfterMs, 120_000);
            await client.leave();
            // The refund follows the connection's close; bounded in time, not a timing assertion.
            const until = Date.now() + 5_000;
            while ((await slow.peek('client-1')).retryAfterMs !== 60_000 && Date.now() < until)
              await new Promise((resolve) => setTimeout(resolve, 5));
            assert.equal(
              (await slow.peek('client-1')).retryAfterMs,
              60_000,
              'the reservation was given back',
            );
          });
          await new Promise((resolve) => setImmediate(resolve));
          assert.deepEqual(rejections, []);
        } finally {
          process.off('unhandledRejection', recordRejection);
        }
      });
    }

    it('nothing logged on refusals, key errors or store failures contains the key', async (t) => {
      reset();
      const lines: string[] = [];
      const capture = (...args: unknown[]) => void lines.push(inspect(args, { depth: 8 }));
      t.mock.method(console, 'error', capture);
      t.mock.method(console, 'warn', capture);
      t.mock.method(console, 'log', capture);
      const store = new FailingStore();
      // Default logger and onError: what an application that configures nothing would log.
      const login = createLimiter({
        name: 'login',
        rule: tokenBucket({ limit: 1, period: '1m' }),
        store,
        clock,
      });
      const key = (request: unknown) =>
        header(request, 'x-case') === 'missing' ? '' : 'login:alice@example.com|203.0.113.7';
      await withApp({ routes: { 'POST /api/things': { limits: login, key } } }, async (app) => {
        const bodies: string[] = [];
        const statuses: number[] = [];
        for (const [mode, which] of [
          ['ok', 'ok'],
          ['ok', 'ok'],
          ['ok', 'missing'],
          ['reject', 'ok'],
          ['hang', 'ok'],
        ] as const) {
          store.mode = mode;
          const reply = await app.request('POST', '/api/things', { 'x-case': which });
          statuses.push(reply.status);
          bodies.push(reply.body);
        }
        assert.deepEqual(statuses, [200, 429, 500, 503, 503]);
        assert.ok(lines.length >= 2, 'the 500 and the store failure were logged');
        for (const text of [...lines, ...bodies]) {
          assert.doesNotMatch(text, /alice|example\.com|203\.0\.113/);
        }
      });
    });
  });
}
