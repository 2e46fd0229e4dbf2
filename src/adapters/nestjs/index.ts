/**
 * `sluice/nestjs`: rate limits for NestJS, in the shape of `@nestjs/throttler`: a module that
 * holds the limit for every route, a guard that enforces it, `@RateLimit()` for a route's or a
 * controller's own limit and `@SkipRateLimit()` to leave the module's limit out.
 *
 * @example
 * import { APP_GUARD } from '@nestjs/core';
 * import { RateLimitGuard, RateLimitModule } from 'sluice/nestjs';
 * const imports = [RateLimitModule.forRoot({ limits: api, key: (req) => ipKey(clientAddress(req).address) })];
 * const providers = [{ provide: APP_GUARD, useClass: RateLimitGuard }]; // in your AppModule
 *
 * @module sluice/nestjs
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  HttpException,
  Inject,
  Injectable,
  Module,
  Optional,
  type CanActivate,
  type DynamicModule,
  type ExecutionContext,
  type InjectionToken,
  type ModuleMetadata,
} from '@nestjs/common';
import type { Decision } from '../../core/decision.js';
import { withSocketAddress } from '../shared/socket-address.js';
import { createGuard, type Guard, type RequestRateLimit } from '../../http/guard.js';
import { errorResponse, limitedResponse, type LimitedResponseOptions } from '../../http/problem.js';
import {
  applyNodeOutcome,
  closeSignal,
  nodeRequestFacts,
  sendNodeResponse,
  type RateLimitedRequest,
} from '../node/response.js';

import type { RateLimitInput } from '../../http/quick-options.js';
export type { RateLimitOptions, KeySpec, KeyResult, ErrorReportDetails } from '../../http/guard.js';
export type { QuickRateLimitOptions, RateLimitInput } from '../../http/quick-options.js';
export type { CountOnly, RequestRateLimit } from '../../http/guard.js';

/** The injection token of the module's limit (what {@link RateLimitModule.forRoot} was given). */
export const RATE_LIMIT_OPTIONS: unique symbol = Symbol('sluice rate limit options');

/**
 * A response of the platform, as `@Res()` gives it: a `node:http` one (Express's), or one that
 * wraps it as `raw` (Fastify's reply).
 */
export type PlatformResponse = ServerResponse | { raw: ServerResponse };

/** The limits `@RateLimit()` and `@SkipRateLimit()` put on a controller class or a handler. */
interface RouteLimits {
  guards: Guard<unknown>[];
  skipModuleLimit?: boolean;
}

// Kept beside the classes and methods rather than in reflect-metadata: nothing is added to them,
// and the guard finds a route's limits with one lookup.
const routeLimits = new WeakMap<object, RouteLimits>();

function limitsOf(target: object): RouteLimits {
  let limits = routeLimits.get(target);
  if (limits === undefined) {
    limits = { guards: [] };
    routeLimits.set(target, limits);
  }
  return limits;
}

/** The method a decorator was put on, or the class. */
function decorated(target: object, descriptor: PropertyDescriptor | undefined): object {
  return typeof descriptor?.value === 'function' ? (descriptor.value as object) : target;
}

/** The platform's own request object: the `node:http` message is `raw` under Fastify. */
function messageOf(request: unknown): IncomingMessage {
  const raw = (request as { raw?: unknown }).raw;
  return (typeof raw === 'object' && raw !== null ? raw : request) as IncomingMessage;
}

function nodeResponseOf(response: PlatformResponse): ServerResponse {
  return 'raw' in response ? response.raw : response;
}

function guardFor<Request>(options: RateLimitInput<Request>): Guard<unknown> {
  return createGuard(withSocketAddress(options, messageOf)) as Guard<unknown>;
}

/**
 * A limit of a controller's routes (on the class) or of one route (on the handler), besides the
 * module's. Several apply in the order they are written, after the module's limit and the
 * controller's. The options are checked here, when the class is defined. It takes effect where
 * {@link RateLimitGuard} runs (as `APP_GUARD`, or `@UseGuards(RateLimitGuard)`).
 *
 * @default every method, draft headers (see {@link RateLimitOptions})
 * @example
 * class Auth { @Post('login') @RateLimit({ limits: logins, key: (req) => ipKey(clientAddress(req).address) }) login() {} }
 */
export function RateLimit<Request = IncomingMessage>(
  options: RateLimitInput<Request>,
): ClassDecorator & MethodDecorator {
  const guard = guardFor(options);
  return (target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    // Decorators are applied from the bottom up: the one written first goes first.
    limitsOf(decorated(target, descriptor)).guards.unshift(guard);
  };
}

/**
 * Leaves the module's limit out of a controller's routes (on the class) or of one route (on the
 * handler); limits that `@RateLimit()` puts there still apply. `@SkipRateLimit(false)` on a
 * handler brings the module's limit back in a controller that skips it.
 *
 * @default true
 * @example
 * class Health { @Get() @SkipRateLimit() check() {} }
 */
export function SkipRateLimit(skip = true): ClassDecorator & MethodDecorator {
  return (target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    limitsOf(decorated(target, descriptor)).skipModuleLimit = skip;
  };
}

/**
 * Thrown by {@link RateLimitGuard} after it has answered a request itself (a 429, 403, 400,
 * 401, 500 or 503, its headers and problem body already sent): it stops Nest's pipeline, and
 * Nest's exception filter, finding the response sent, only ends it. An exception filter of your
 * own that catches every exception should do the same (`response.headersSent`).
 *
 * @example
 * if (exception instanceof RateLimitAnsweredException) return;
 */
export class RateLimitAnsweredException extends HttpException {
  constructor(status: number) {
    super('The rate limit has answered this request.', status);
  }
}

/**
 * The guard: on an HTTP request it runs the module's limit (unless `@SkipRateLimit()`), then the
 * controller's and the route's `@RateLimit()` limits. An admitted request gets each limit's
 * headers and goes on, carrying what the last limit decided as `request.rateLimit`
 * ({@link rateLimitOf}); with `countOnly` it is finished when its response closes. Anything else
 * is answered by the guard (the same 429, 403, 400, 401, 500 and 503 as every sluice adapter),
 * which then throws {@link RateLimitAnsweredException}. Other contexts (microservices,
 * WebSockets) pass untouched. Guards run after middleware: a body parser has read a JSON body
 * before the guard decides, so a limit that must answer before the body (slow or hostile
 * clients) belongs in middleware (`sluice/express`).
 *
 * @default the module's limit, or none when the guard is used without {@link RateLimitModule}
 * @example
 * providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }]
 */
export class RateLimitGuard<Request = IncomingMessage> implements CanActivate {
  readonly #moduleLimit: Guard<unknown> | undefined;

  /** @param options the module's limit; `new RateLimitGuard(options)` works outside DI too. */
  constructor(options?: RateLimitInput<Request>) {
    this.#moduleLimit = options === undefined ? undefined : guardFor(options);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const http = context.switchToHttp();
    const request = http.getRequest<RateLimitedRequest & object>();
    const response = nodeResponseOf(http.getResponse<PlatformResponse>());
    const route = routeLimits.get(context.getHandler());
    const controller = routeLimits.get(context.getClass());
    const skip = route?.skipModuleLimit ?? controller?.skipModuleLimit ?? false;
    const facts = nodeRequestFacts(messageOf(request), (request as { originalUrl?: string }).originalUrl);
    const run = async (guard: Guard<unknown>) => {
      // A limit in delay mode learns that the client went away from the response's close.
      const outcome = await guard.check(
        request,
        guard.delays ? { ...facts, signal: closeSignal(response) } : facts,
      );
      if (!applyNodeOutcome(request, response, outcome, guard))
        throw new RateLimitAnsweredException(response.statusCode);
    };
    if (this.#moduleLimit !== undefined && !skip) await run(this.#moduleLimit);
    for (const guard of controller?.guards ?? []) await run(guard);
    for (const guard of route?.guards ?? []) await run(guard);
    return true;
  }
}
Injectable()(RateLimitGuard);
// The constructor's parameter, declared as `@Optional() @Inject(RATE_LIMIT_OPTIONS)` would.
Inject(RATE_LIMIT_OPTIONS)(RateLimitGuard, undefined, 0);
Optional()(RateLimitGuard, undefined, 0);

/**
 * How {@link RateLimitModule.forRootAsync} builds the module's limit, e.g. from a Redis client
 * or a configuration another module provides.
 *
 * @example
 * RateLimitModule.forRootAsync({ inject: [REDIS], useFactory: (redis: Redis) => ({ limits: api(redis), key }) })
 */
export interface RateLimitModuleAsyncOptions<Request = IncomingMessage> {
  imports?: ModuleMetadata['imports'];
  inject?: InjectionToken[];
  useFactory: (...args: never[]) => RateLimitInput<Request> | Promise<RateLimitInput<Request>>;
  /** Visible in every module without importing it. @default false */
  global?: boolean;
}

/**
 * The module: it provides the module's limit (`RATE_LIMIT_OPTIONS`) and {@link RateLimitGuard},
 * and exports both. Register the guard yourself, for every route (`APP_GUARD`) or where you
 * choose (`@UseGuards(RateLimitGuard)`), as with `ThrottlerGuard`.
 *
 * @example
 * imports: [RateLimitModule.forRoot({ limits: api, key: (req) => userKey(req) })]
 */
export class RateLimitModule {
  /**
   * The module with the limit every guarded route passes; the options are checked when the
   * guard is built, as the application starts.
   *
   * @default not global
   * @example
   * RateLimitModule.forRoot({ limits: api, key: (req) => ipKey(clientAddress(req).address) })
   */
  static forRoot<Request = IncomingMessage>(
    options: RateLimitInput<Request>,
    { global = false }: { global?: boolean } = {},
  ): DynamicModule {
    return moduleWith({ provide: RATE_LIMIT_OPTIONS, useValue: options }, [], global);
  }

  /**
   * The module with a limit built by a factory from other providers.
   *
   * @default not global
   * @example
   * RateLimitModule.forRootAsync({ inject: [REDIS], useFactory: (redis: Redis) => ({ limits: api(redis), key }) })
   */
  static forRootAsync<Request = IncomingMessage>(
    options: RateLimitModuleAsyncOptions<Request>,
  ): DynamicModule {
    const { imports = [], inject = [], useFactory, global = false } = options;
    return moduleWith({ provide: RATE_LIMIT_OPTIONS, useFactory, inject }, imports, global);
  }
}
Module({})(RateLimitModule);

function moduleWith(
  provider: NonNullable<ModuleMetadata['providers']>[number],
  imports: NonNullable<ModuleMetadata['imports']>,
  global: boolean,
): DynamicModule {
  return {
    module: RateLimitModule,
    global,
    imports,
    providers: [provider, RateLimitGuard],
    exports: [RATE_LIMIT_OPTIONS, RateLimitGuard],
  };
}

/**
 * What the last limit a request passed decided for it (its decisions, and with `countOnly` its
 * receipts), or undefined before any limit admitted it: `request.rateLimit`.
 *
 * @example
 * list(@Req() req: Request) { return { remaining: rateLimitOf(req)?.decisions[0]?.remaining }; }
 */
export function rateLimitOf(request: object): RequestRateLimit | undefined {
  return (request as RateLimitedRequest).rateLimit;
}

/**
 * Sends the 429 for refused decision(s) on the platform's response (`@Res()`), e.g. after
 * `await login.take(key)` in a handler.
 *
 * @default draft headers
 * @example
 * const d = await login.take(loginKey);
 * if (!d.allowed) return sendRateLimited(res, d);
 */
export function sendRateLimited(
  response: PlatformResponse,
  decisions: Decision | readonly Decision[],
  options?: LimitedResponseOptions,
): void {
  sendNodeResponse(nodeResponseOf(response), limitedResponse(decisions, options));
}

/**
 * Sends the problem response for an error a limit threw (400, 401, 500, 503) on the platform's
 * response (`@Res()`); a 500 never carries the error's message.
 *
 * @default 500 for anything that is not a SluiceError
 * @example
 * try { d = await login.take(key); } catch (error) { return sendError(res, error); }
 */
export function sendError(response: PlatformResponse, error: unknown): void {
  sendNodeResponse(nodeResponseOf(response), errorResponse(error));
}
