/**
 * What an adapter supplies to run the HTTP conformance suite (the harness, the app it builds and
 * the running app's requests), and what the suite's sections share: the suite built from a
 * harness, with its manual clock, limiters on it and the app of each test.
 */
import { inspect } from 'node:util';
import { manualClock, type ManualClock } from '../../core/clock.js';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import type { RateLimitOptions } from '../../http/guard.js';
import type { RateLimitInput } from '../../http/quick-options.js';
import type { HeaderStyle } from '../../http/headers.js';
import { createLimiter, type Limiter, type LimiterOptions } from '../../limiter/limiter.js';
import { MemoryStore } from '../../stores/memory/store.js';
import { FailingStore } from '../failing-store.js';
import { snapshot, type Snapshot } from './expected-responses.js';

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
  everyRoute?: RateLimitInput<unknown>;
  /**
   * Where `everyRoute` is mounted: only paths under it pass the limit, and the framework's own
   * way of mounting is used (Express: `app.use('/api', …)`, where `req.path` loses the prefix).
   */
  everyRouteMount?: string;
  /** `everyRoute` mounted twice, as an app that registers the middleware twice would. */
  everyRouteTwice?: boolean;
  /** Limits on one route only. */
  routes?: Partial<Record<LimitedRoute, RateLimitInput<unknown>>>;
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
   * True when the adapter puts the limit's outcome on the request and finishes `countOnly` requests (and
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

/** The origin of the page the suite's requests come from, unless a test sends none. */
export const ORIGIN = 'https://app.example';

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

/** Where the manual clock stands at the start of every test. */
const START = Date.UTC(2026, 0, 1);

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
 * What every section of the suite works with. `clock` is the running test's: each test calls
 * `reset()` first, which replaces it.
 */
export interface HttpSuite {
  readonly harness: HttpHarness;
  readonly clock: ManualClock;
  /** The log lines of the limits that log to it, kept out of the test output. */
  readonly quiet: ReturnType<typeof recorder>;
  header(request: unknown, name: string): string | undefined;
  /** A token bucket of `limit` a minute on a memory store and the suite's clock. */
  limiter(name: string, limit: number, extra?: Partial<LimiterOptions>): Limiter;
  /** Runs `run` with the app of `spec`, its requests sent as a page on another origin sends them. */
  withApp(spec: AppSpec, run: (app: RunningApp) => Promise<void>): Promise<void>;
  /** Runs `run` with the app of `spec`, its requests sent with only the headers a test gives. */
  withBareApp(spec: AppSpec, run: (app: RunningApp) => Promise<void>): Promise<void>;
  post(app: RunningApp, path: string, headers?: Record<string, string>): Promise<Snapshot>;
  /** A fresh manual clock at the suite's start, for the test about to run. */
  reset(): ManualClock;
  /** A limit on a store that counts its calls, and a key function that counts its own. */
  counted(name: string): { limits: Limiter; key: () => string; store: FailingStore; seen: { keys: number } };
  /** The client address as the test sends it; every adapter can read a header. */
  addressHeader(request: unknown): string | undefined;
}

/**
 * Builds the suite's state for one harness (inside its `describe`).
 *
 * @example
 * const suite = createHttpSuite(harness);
 * refusalTests(suite);
 */
export function createHttpSuite(harness: HttpHarness): HttpSuite {
  let clock: ManualClock;
  const quiet = recorder();
  const header = (request: unknown, name: string) => harness.header(request, name);
  const limiter = (name: string, limit: number, extra: Partial<LimiterOptions> = {}): Limiter =>
    createLimiter({
      name,
      rule: tokenBucket({ limit, period: '1m' }),
      store: new MemoryStore(),
      clock,
      logger: quiet.logger,
      ...extra,
    });
  const withBareApp = async (spec: AppSpec, run: (app: RunningApp) => Promise<void>): Promise<void> => {
    const app = await harness.start(spec);
    try {
      await run(app);
    } finally {
      await app.close();
    }
  };
  return {
    harness,
    get clock() {
      return clock;
    },
    quiet,
    header,
    limiter,
    withApp: (spec, run) => withBareApp(spec, (app) => run(fromAnotherOrigin(app))),
    withBareApp,
    post: async (app, path, headers) => snapshot(await app.request('POST', path, headers)),
    reset: () => (clock = manualClock(START)),
    counted: (name) => {
      const store = new FailingStore();
      const seen = { keys: 0 };
      const key = () => {
        seen.keys++;
        return 'client';
      };
      return { limits: limiter(name, 5, { store }), key, store, seen };
    },
    addressHeader: (request) => header(request, 'x-client-address'),
  };
}
