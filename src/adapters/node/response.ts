/**
 * Writing a guard's outcome onto a `node:http` response, shared by `sluice/node` and
 * `sluice/express` (an Express response is a `node:http` one).
 */
import type { IncomingMessage } from 'node:http';
import {
  isPreflight,
  needsFinishing,
  type Guard,
  type GuardOutcome,
  type RequestFacts,
  type RequestRateLimit,
} from '../../http/guard.js';
import type { HeaderValues } from '../../http/headers.js';
import { pathOf } from '../../http/path.js';
import { errorResponse, type HttpResponse } from '../../http/problem.js';
import { EXPOSE_HEADER, mergeExposed } from '../../http/merge-exposed.js';

/** The part of a `node:http` response (and so of an Express one) the adapters write to. */
export interface NodeResponseLike {
  statusCode: number;
  readonly headersSent: boolean;
  destroy(error?: Error): unknown;
  getHeader(name: string): unknown;
  setHeader(name: string, value: string): unknown;
  end(body: string): unknown;
}

/**
 * Copies header values onto a `node:http`-style response, merging the expose list.
 *
 * @example
 * setNodeHeaders(res, { RateLimit: '"api";r=9;t=60' })
 */
export function setNodeHeaders(response: NodeResponseLike, headers: HeaderValues): void {
  for (const name in headers) {
    const value = headers[name] as string;
    response.setHeader(name, name === EXPOSE_HEADER ? mergeExposed(response.getHeader(name), value) : value);
  }
}

/**
 * Sends a computed response on a `node:http`-style response.
 *
 * @example
 * sendNodeResponse(res, limitedResponse(decision))
 */
export function sendNodeResponse(response: NodeResponseLike, http: HttpResponse): void {
  setNodeHeaders(response, http.headers);
  response.statusCode = http.status;
  response.end(http.body);
}

/**
 * What a guard reads of a `node:http` request (and so of an Express one): the method, the path
 * of `target` (the full request target, also under an Express mount point) and whether it is a
 * CORS preflight.
 *
 * @default `request.url` as the target
 * @example
 * guard.check(req, nodeRequestFacts(req))
 */
export function nodeRequestFacts(request: IncomingMessage, target = request.url): RequestFacts {
  const method = request.method ?? 'GET';
  const headers = request.headers;
  return {
    method,
    path: pathOf(target),
    preflight: isPreflight(method, headers['access-control-request-method']),
    hasOrigin: headers.origin !== undefined,
  };
}

/**
 * Answers a request whose rate-limit response could not be written (an adapter's last resort):
 * a 500 problem when nothing was sent yet, otherwise the connection is closed, since a response
 * half written cannot be completed. Never throws.
 *
 * @example
 * try { sendNodeResponse(res, outcome.response) } catch (error) { answerNodeFailure(res, error) }
 */
export function answerNodeFailure(response: NodeResponseLike, error: unknown): void {
  try {
    if (!response.headersSent) return sendNodeResponse(response, errorResponse(error));
  } catch {
    // Fall through: the response cannot be written, so the connection is ended instead.
  }
  try {
    response.destroy();
  } catch {
    // Nothing is left to do for this request.
  }
}

/**
 * The part of a `node:http` response whose end a guard waits for to finish a request: a Fastify
 * reply's `raw` and Hono's `c.env.outgoing` under `@hono/node-server` are such responses too.
 */
export interface ClosingResponse {
  readonly statusCode: number;
  /** True once the application ended the response (`end()`), its whole body given to node. */
  readonly writableEnded: boolean;
  readonly destroyed: boolean;
  once(event: 'close', listener: () => void): unknown;
}

/**
 * Finishes an admitted request when its response closes (its receipts under `countOnly`, its
 * concurrency lease): with its status when the response was ended, as failed when the
 * connection closed before. Does nothing (and allocates nothing) for an outcome with nothing to
 * finish.
 *
 * @example
 * finishOnClose(res, outcome, guard)
 */
export function finishOnClose(
  response: ClosingResponse,
  outcome: RequestRateLimit,
  guard: Pick<Guard<never>, 'finish'>,
): void {
  if (!needsFinishing(outcome)) return;
  // Ended, not finished: finishing also waits for the client to read, which an in-process client
  // (Fastify's inject) never does; a response ended before the connection closed is complete.
  const finish = () => guard.finish(outcome, response.writableEnded ? response.statusCode : undefined);
  // Closed while the limit decided (the client went away): 'close' was emitted already.
  if (response.destroyed) finish();
  else response.once('close', finish);
}

/**
 * A signal that aborts when the connection closes before the response was ended: the client
 * went away (for a guard in delay mode, which then gives its reservations back).
 */
export function closeSignal(response: ClosingResponse): AbortSignal {
  const controller = new AbortController();
  if (response.destroyed) controller.abort();
  else
    response.once('close', () => {
      if (!response.writableEnded) controller.abort();
    });
  return controller.signal;
}

/** The facts of a node request for `guard`, with the client's leaving for a guard that delays. */
export function nodeGuardFacts(
  request: IncomingMessage,
  response: ClosingResponse,
  guard: Pick<Guard<never>, 'delays'>,
  target = request.url,
): RequestFacts {
  const facts = nodeRequestFacts(request, target);
  if (guard.delays) facts.signal = closeSignal(response);
  return facts;
}

/** A request the node and Express adapters put the limit's outcome on, as `rateLimit`. */
export interface RateLimitedRequest {
  rateLimit?: RequestRateLimit;
}

/**
 * Copies a guard's outcome onto a `node:http`-style response: the headers of an admitted request
 * (true: it may go on, with the outcome as `request.rateLimit` and its receipts finished when the
 * response closes), or the response (false). Never throws: what fails while writing is reported
 * through the guard and answered by {@link answerNodeFailure}.
 *
 * @example
 * if (applyNodeOutcome(req, res, await guard.check(req, nodeRequestFacts(req)), guard)) next();
 */
export function applyNodeOutcome(
  request: RateLimitedRequest,
  response: NodeResponseLike & ClosingResponse,
  outcome: GuardOutcome,
  guard: Pick<Guard<never>, 'report' | 'finish'>,
): boolean {
  try {
    if (outcome.action === 'continue') {
      setNodeHeaders(response, outcome.headers);
      request.rateLimit = outcome;
      finishOnClose(response, outcome, guard);
      return true;
    }
    // The guard has already turned limit errors into responses; they are not framework errors.
    sendNodeResponse(response, outcome.response);
  } catch (error) {
    guard.report(error);
    answerNodeFailure(response, error);
  }
  return false;
}
