/**
 * Gateway mode: with `upstream` (or `upstreams`) in the policy, every request the server does not
 * answer itself goes to the route of its host and path, is decided by the rules it matches (the
 * same guards the decision API uses) and, admitted, forwarded to the route's upstream by
 * http-proxy-3; a refused one gets the library's response (429, 403, 503 …) without reaching
 * it, and one no route takes gets 404 `no_route`.
 */
import { Agent as HttpAgent, STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createProxyServer } from 'http-proxy-3';
import { finishOnClose, type ClosingResponse } from '../../adapters/node/response.js';
import { AddressList } from '../../http/address-list.js';
import type { HeaderValues } from '../../http/headers.js';
import { isPreflight, needsFinishing } from '../../http/guard.js';
import { EXPOSE_HEADER, mergeExposed } from '../../http/merge-exposed.js';
import { normalizePath, pathOf } from '../../http/path.js';
import type { HttpResponse } from '../../http/problem.js';
import type { CompiledPolicy } from '../policy/compile.js';
import { isOwnPath } from '../policy/reserved-paths.js';
import type { DecisionRequest } from '../policy/request.js';
import { forwardedTarget } from './forwarded-target.js';
import { mergeHeaders } from './decide.js';
import { problem, send } from './http-io.js';
import { UpstreamHealthChecks, type UpstreamHealth } from './upstream-health.js';
import { UpstreamRoutes } from './upstream-routes.js';

/**
 * True when the request is the gateway's: the policy names an upstream and the path is none of
 * the server's own (`/v1` and `/dashboard` and below, the health endpoints, `/metrics`,
 * `/openapi.json`). Paths are compared as the rules compare them, in the spelling the upstream
 * would get, so no spelling of an own path is ever forwarded.
 */
export function isForwarded(policy: CompiledPolicy, url: string | undefined): boolean {
  if (policy.policy.upstreams.length === 0) return false;
  const target = forwardedTarget(url);
  // A target with no single reading is the gateway's to refuse: it is never forwarded.
  if (target === undefined) return true;
  return !isOwnPath(normalizePath(pathOf(target)));
}

/** The gateway of a server: one proxy and one pool of upstream connections for its whole life. */
export interface Gateway {
  /**
   * Decides and forwards (or refuses) a request that {@link isForwarded} says is the gateway's.
   * Resolves once the request no longer needs its policy: when it was sent on, or, when a rule
   * holds a slot for it (a concurrency rule), once its response closed and the slot went back.
   */
  web(policy: CompiledPolicy, req: IncomingMessage, res: ServerResponse): Promise<void>;
  /**
   * The same for a protocol upgrade (WebSocket): limited at upgrade time, then a tunnel. Of every
   * path with `everyPath` (the server's own are on another listener), else of those
   * {@link isForwarded} says are the gateway's.
   */
  upgrade(
    policy: CompiledPolicy,
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    everyPath?: boolean,
  ): Promise<void>;
  /** Whether each route's upstream accepts connections (at most one probe per upstream a second). */
  health(policy: CompiledPolicy): Promise<UpstreamHealth[]>;
  /** Ends the open tunnels (they would hold a closing server open for as long as they last). */
  closeTunnels(): void;
  /** Closes the idle upstream connections; call once no request is in flight. */
  close(): void;
}

/**
 * What the rules say of a request: the response that refuses it, or the headers that admit it;
 * `held` when a rule that admitted it holds something until its response ends (a concurrency
 * rule's slot).
 */
type Admission = ({ response: HttpResponse } | { headers: HeaderValues }) & { held?: boolean };

/** Told of what the gateway did, by route name (for metrics: never a request value). */
export interface GatewayObserver {
  /** A request or upgrade was sent to the route's upstream. */
  forwarded(route: string): void;
  /** The upstream's response began, `seconds` after the request was sent to it. */
  answered(route: string, seconds: number): void;
  /** The upstream could not be reached: the client got a 502 (or a cut response). */
  failed(route: string): void;
  /** No route takes the request: 404 `no_route`. */
  unrouted(): void;
}

/** Options of {@link createGateway}. */
export interface GatewayOptions {
  /** Told of each request or upgrade the upstream could not take (each answered 502). */
  onUpstreamError?: (error: unknown) => void;
  observer?: GatewayObserver;
}

const unobserved: GatewayObserver = {
  forwarded: () => {},
  answered: () => {},
  failed: () => {},
  unrouted: () => {},
};

export function createGateway(options: GatewayOptions = {}): Gateway {
  const upstreamError = options.onUpstreamError ?? (() => {});
  const observer = options.observer ?? unobserved;
  const upstreamFailed = (route: string, error: unknown) => {
    observer.failed(route);
    upstreamError(error);
  };
  // When each forwarded request was sent, to time its upstream's answer.
  const sent = new WeakMap<IncomingMessage, { route: string; at: number }>();
  // Keep-alive pools: a connection per request to the upstream would cost a handshake each.
  const agents = {
    'http:': new HttpAgent({ keepAlive: true, scheduling: 'lifo' }),
    'https:': new HttpsAgent({ keepAlive: true, scheduling: 'lifo' }),
  };
  const proxy = createProxyServer({ xfwd: false, ws: true });
  // Every call passes its own error callback; this keeps a stray event from throwing.
  proxy.on('error', () => {});
  // Our exposed headers (Retry-After, RateLimit …) and the application's are one list.
  proxy.on('proxyRes', (upstreamRes, req, res) => {
    const started = sent.get(req);
    if (started !== undefined) observer.answered(started.route, (performance.now() - started.at) / 1000);
    const theirs = upstreamRes.headers[EXPOSE_HEADER.toLowerCase()];
    const ours = res.getHeader(EXPOSE_HEADER);
    if (theirs !== undefined && typeof ours === 'string')
      upstreamRes.headers[EXPOSE_HEADER.toLowerCase()] = mergeExposed(theirs, ours);
  });
  // Each policy's routes, built once (a reload brings a policy of its own).
  const routes = new WeakMap<CompiledPolicy, UpstreamRoutes>();
  const routesOf = (policy: CompiledPolicy): UpstreamRoutes => {
    let table = routes.get(policy);
    if (table === undefined) routes.set(policy, (table = new UpstreamRoutes(policy.policy.upstreams)));
    return table;
  };
  const healthChecks = new UpstreamHealthChecks();
  const trust = new WeakMap<CompiledPolicy, AddressList>();
  const trustOf = (policy: CompiledPolicy): AddressList => {
    let list = trust.get(policy);
    if (list === undefined) {
      // Exact, as the client-address step reads trusted proxies: a translated address is not
      // the proxy it embeds.
      list = new AddressList([...policy.policy.clients.trustedProxies], 'clients trustedProxies', 'exact');
      trust.set(policy, list);
    }
    return list;
  };
  // Both ends of every tunnel: a client that left may leave the upstream's end half open.
  const tunnels = new Set<Duplex>();
  const track = (socket: Duplex) => {
    tunnels.add(socket);
    socket.once('close', () => tunnels.delete(socket));
  };
  proxy.on('open', track);

  return {
    async web(policy, req, res) {
      const forwarded = forwardedTarget(req.url);
      if (forwarded === undefined) return send(res, ambiguous('path'));
      // The proxy parses this again and gets it back unchanged: the upstream gets what was matched.
      req.url = forwarded;
      const request = readRequest(policy, req);
      const route = request === undefined ? undefined : routesOf(policy).choose(request.host, request.path);
      if (request !== undefined && route === undefined) observer.unrouted();
      const admission =
        request === undefined
          ? { response: ambiguous('host') }
          : route === undefined
            ? { response: noRoute() }
            : await admit(policy, req, request, res, delays(policy) ? closedSignal(res) : undefined);
      if ('response' in admission) return refuse(admission, res, (response) => send(res, response));
      for (const [name, value] of Object.entries(admission.headers)) res.setHeader(name, value);
      forwardedHeaders(req, trustOf(policy));
      const { name, target } = route!;
      observer.forwarded(name);
      sent.set(req, { route: name, at: performance.now() });
      proxy.web(req, res, { target, agent: agents[target.protocol as 'http:' | 'https:'] }, (error) => {
        upstreamFailed(name, error);
        if (res.headersSent) res.destroy();
        else send(res, badGateway());
      });
      return heldUntilClosed(admission, res);
    },

    async upgrade(policy, req, socket, head, everyPath = false) {
      socket.on('error', () => socket.destroy());
      if (!everyPath && !isForwarded(policy, req.url))
        return writeRaw(
          socket,
          problem(404, 'not_found', 'Not Found', 'No such endpoint; see /openapi.json.'),
        );
      const forwarded = forwardedTarget(req.url);
      if (forwarded === undefined) return writeRaw(socket, ambiguous('path'));
      req.url = forwarded;
      const request = readRequest(policy, req);
      if (request === undefined) return writeRaw(socket, ambiguous('host'));
      const route = routesOf(policy).choose(request.host, request.path);
      if (route === undefined) {
        observer.unrouted();
        return writeRaw(socket, noRoute());
      }
      const tunnel = socketClosing(socket);
      const admission = await admit(policy, req, request, tunnel);
      if ('response' in admission) return refuse(admission, tunnel, (response) => writeRaw(socket, response));
      forwardedHeaders(req, trustOf(policy));
      track(socket);
      observer.forwarded(route.name);
      // No pooled agent: an upgraded connection is never given back to a pool.
      proxy.ws(req, socket, head, { target: route.target, agent: false }, (error) => {
        upstreamFailed(route.name, error);
        // Before the upstream answered, the client still reads HTTP; after, only a close will do.
        if (socket.writable && !socket.destroyed && (socket as Socket).bytesWritten === 0)
          writeRaw(socket, badGateway());
        else socket.destroy();
      });
      return heldUntilClosed(admission, tunnel);
    },

    health(policy) {
      return healthChecks.check(routesOf(policy).all);
    },

    closeTunnels() {
      for (const socket of tunnels) socket.destroy();
    },

    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}

/**
 * The request as the rules see it; undefined for a Host with no single reading (refused with
 * 400): neither a rule nor a route on a host could say whether it applies.
 */
function readRequest(policy: CompiledPolicy, req: IncomingMessage): DecisionRequest | undefined {
  const request = policy.read({
    method: req.method ?? 'GET',
    path: req.url ?? '/',
    headers: flatHeaders(req.headers),
    address: req.socket.remoteAddress ?? '',
  });
  if (request.host === undefined && req.headers.host !== undefined && req.headers.host !== '')
    return undefined;
  return request;
}

/**
 * The rules the request matches, in file order, each by its guard; the first that answers
 * (429, 403, 503 …) stops. A CORS preflight is left alone, as the library's adapters do. What a
 * rule that admitted holds (a concurrency rule's slot) is finished by that rule's guard once
 * `closing` closes: when the response ended, the upstream failed or the client left, and also
 * when a later rule refused the request.
 */
async function admit(
  policy: CompiledPolicy,
  req: IncomingMessage,
  request: DecisionRequest,
  closing: ClosingResponse,
  signal?: AbortSignal,
): Promise<Admission> {
  const facts = {
    method: request.method,
    path: request.path,
    preflight: isPreflight(req.method, req.headers['access-control-request-method']),
    hasOrigin: req.headers.origin !== undefined,
    // A rule of mode: delay waits for a slot, and gives it back when the client leaves.
    ...(signal === undefined ? {} : { signal }),
  };
  let headers: HeaderValues | undefined;
  let held = false;
  for (const rule of policy.matching(request)) {
    const outcome = await rule.guard.check(request, facts);
    if (outcome.action === 'respond') return { response: outcome.response, held };
    if (needsFinishing(outcome)) {
      held = true;
      finishOnClose(closing, outcome, rule.guard);
    }
    // One rule's headers are sent as they are: most requests match one rule, and pay no copy.
    headers = headers === undefined ? outcome.headers : mergeHeaders(headers, outcome.headers);
  }
  return { headers: headers ?? {}, held };
}

/** Writes a refusal; a slot an earlier rule took for the request is held until `closing` closed. */
function refuse(
  admission: Admission & { response: HttpResponse },
  closing: ClosingResponse,
  write: (response: HttpResponse) => void,
): Promise<void> | undefined {
  write(admission.response);
  return heldUntilClosed(admission, closing);
}

/**
 * Resolves once `closing` closed when the admission holds a slot, else at once: the request
 * keeps its policy in use until then, so that a reload does not close the limit that gave the
 * slot before the slot is released to it.
 */
function heldUntilClosed(admission: Admission, closing: ClosingResponse): Promise<void> | undefined {
  if (admission.held !== true) return undefined;
  return new Promise((resolve) => {
    if (closing.destroyed) resolve();
    else closing.once('close', () => resolve());
  });
}

/** An upgrade's socket seen as a response that closes: a tunnel's slot is held while it is open. */
function socketClosing(socket: Duplex): ClosingResponse {
  return {
    statusCode: 101,
    writableEnded: false,
    get destroyed() {
      return socket.destroyed;
    },
    once: (_event, listener) => socket.once('close', listener),
  };
}

const delaying = new WeakMap<CompiledPolicy, boolean>();

/** Whether a rule of the policy may hold a request (`mode: delay`), worked out once per policy. */
function delays(policy: CompiledPolicy): boolean {
  let answer = delaying.get(policy);
  if (answer === undefined) delaying.set(policy, (answer = policy.rules.some((rule) => rule.guard.delays)));
  return answer;
}

/** Aborted when the response closes before it was sent: the client left while its request waited. */
function closedSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableEnded) controller.abort();
  });
  return controller.signal;
}

/** Node joins repeated request headers into one value, but for a few it keeps a list. */
function flatHeaders(headers: IncomingMessage['headers']): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

/**
 * Headers through which a client could pass for another client, or make the application see
 * another host, scheme, port, path or method than the rules saw. Proxies and frameworks read
 * them (IIS and Symfony `X-Original-URL`, CDNs their client-address headers, method-override
 * middleware); every `X-Forwarded-*` is one too. Only a trusted proxy's are forwarded.
 */
const routingHeaders = new Set([
  'forwarded',
  'x-real-ip',
  'x-client-ip',
  'true-client-ip',
  'cf-connecting-ip',
  'fastly-client-ip',
  'x-cluster-client-ip',
  'x-original-forwarded-for',
  'x-original-url',
  'x-rewrite-url',
  'x-original-host',
  'x-host',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
]);

function isRouting(name: string): boolean {
  return name.startsWith('x-forwarded-') || routingHeaders.has(name);
}

/**
 * The routing headers as the policy's `clients` say. From a peer that is not a trusted proxy,
 * every routing header it wrote is dropped (it could name anyone, or any route). A name written
 * with `_` for `-` (`X_Forwarded_For`) is dropped from every peer: no proxy writes one, and
 * servers that map headers to variables (CGI, Rack, PHP) read it as the real one.
 * X-Forwarded-For: a trusted proxy's chain is kept and the peer appended; otherwise the chain
 * starts at the peer. X-Forwarded-Proto and -Host are kept from a trusted proxy, else set.
 */
function forwardedHeaders(req: IncomingMessage, trusted: AddressList): void {
  const headers = req.headers;
  const peer = plainAddress(req.socket.remoteAddress ?? '');
  const fromTrusted = trusted.has(peer);
  for (const name in headers) {
    if (name.includes('_')) {
      if (isRouting(name.replaceAll('_', '-'))) delete headers[name];
    } else if (!fromTrusted && isRouting(name)) delete headers[name];
  }
  const chain = headers['x-forwarded-for'];
  headers['x-forwarded-for'] = chain === undefined || chain === '' ? peer : `${chain}, ${peer}`;
  headers['x-forwarded-proto'] ??= 'http';
  if (headers.host !== undefined) headers['x-forwarded-host'] ??= headers.host;
}

/** An IPv4 client of a dual-stack listener is written as itself, not as its mapped IPv6 form. */
function plainAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/** 400 for a request target or Host that has no one spelling to match and forward. */
function ambiguous(part: 'path' | 'host'): HttpResponse {
  return problem(
    400,
    'ambiguous_target',
    'Bad Request',
    part === 'path'
      ? 'The request target has no single reading: it does not parse, or its path writes / or \\ encoded (%2F, %5C).'
      : 'The Host header names no host.',
  );
}

/** 404 for a request no route of the gateway takes (its host and path name no upstream). */
function noRoute(): HttpResponse {
  return problem(404, 'no_route', 'Not Found', 'No upstream of the gateway takes this host and path.');
}

function badGateway(): HttpResponse {
  return problem(502, 'bad_gateway', 'Bad Gateway', 'The upstream did not answer.');
}

/** An HTTP response written on a socket that has not been upgraded, then the end of it. */
function writeRaw(socket: Duplex, response: HttpResponse): void {
  const lines = [`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}`];
  for (const [name, value] of Object.entries(response.headers)) lines.push(`${name}: ${value}`);
  lines.push(`Content-Length: ${Buffer.byteLength(response.body)}`, 'Connection: close');
  socket.end(`${lines.join('\r\n')}\r\n\r\n${response.body}`);
}
