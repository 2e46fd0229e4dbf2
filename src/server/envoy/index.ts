import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import type { Clock } from '../../core/clock.js';
import { isSluiceError } from '../../core/errors.js';
import type { HttpResponse } from '../../http/problem.js';
import type { Store } from '../../stores/contract/store.js';
import { problem, readBody, send, type BodyError } from '../serve/http-io.js';
import { errorFields, throttledReport, type ServerLog } from '../serve/log.js';
import { EnvoyBuckets } from './decide.js';
import { grpcError, listenGrpc } from './grpc.js';
import { requestFromJson, responseToJson } from './json.js';
import { EnvoyMetrics } from './metrics.js';
import { EnvoyService, type ServedEnvoy } from './service.js';

export type { ServedEnvoy };

/** What {@link startEnvoy} needs from the server. */
export interface EnvoyOptions {
  readonly host: string;
  readonly port: number;
  /** The server's store: Envoy's buckets are bound on it once, and kept across reloads. */
  readonly store: Store;
  readonly registry: Registry;
  /** Told of an error no request caused (answered INTERNAL), to log it. */
  failed(error: unknown): void;
  /** Where store failures are logged. */
  readonly log: ServerLog;
  readonly clock: Clock;
  served(): ServedEnvoy | undefined;
  ready(): Promise<boolean>;
}

/** Envoy's rate limit service, running: its gRPC port, its `POST /json` handler, and its end. */
export interface RunningEnvoy {
  readonly port: number;
  /**
   * envoyproxy/ratelimit's `POST /json`: a RateLimitRequest in proto3 JSON, answered the same way;
   * `denied` is the policy's answer to a caller without the `decide` scope (it charges buckets).
   */
  json(req: IncomingMessage, res: ServerResponse, denied?: HttpResponse): Promise<void>;
  close(): Promise<void>;
}

/** Starts Envoy's rate limit service on its gRPC port. */
export async function startEnvoy(options: EnvoyOptions): Promise<RunningEnvoy> {
  const buckets = new EnvoyBuckets(options.store, options.clock);
  const metrics = new EnvoyMetrics(options.registry);
  const service = new EnvoyService(buckets, metrics);
  let grpc;
  try {
    grpc = await listenGrpc({ ...options, service, metrics, storeFailed: storeFailures(options.log) });
  } catch (error) {
    buckets.close();
    throw error;
  }
  return {
    port: grpc.port,
    json: async (req, res, denied) => {
      if (denied === undefined) return answerJson(service, options.served(), req, res);
      req.resume();
      send(res, denied);
    },
    close: async () => {
      await grpc.close();
      buckets.close();
    },
  };
}

/**
 * `POST /json`: 200 with the response when OK, 429 when OVER_LIMIT (its headers stay in the
 * body, as upstream's do), 400 for a body that is not a request, 503 when the store failed or no
 * configuration is loaded (upstream answers 400 for those too; a client should not retry a 400).
 */
async function answerJson(
  service: EnvoyService,
  served: ServedEnvoy | undefined,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (req.method !== 'POST') {
    req.resume();
    res.setHeader('Allow', 'POST');
    return send(res, problem(405, 'method_not_allowed', 'Method Not Allowed', 'This endpoint answers POST.'));
  }
  let body: unknown;
  try {
    body = JSON.parse(await readBody(req));
  } catch (error) {
    if ((error as BodyError).response !== undefined) {
      res.setHeader('Connection', 'close');
      return send(res, (error as BodyError).response);
    }
    return send(res, invalidBody('The body is not JSON.'));
  }
  try {
    const response = await service.shouldRateLimit(requestFromJson(body), served);
    const status = response.overall_code === 'OVER_LIMIT' ? 429 : 200;
    return send(res, {
      status,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(responseToJson(response)),
    });
  } catch (error) {
    if (!isSluiceError(error)) throw error;
    const { details } = grpcError(error);
    if (error.status === 400) return send(res, invalidBody(details));
    return send(res, problem(503, 'rate_limit_unavailable', 'Service Unavailable', details));
  }
}

function invalidBody(detail: string) {
  return problem(400, 'invalid_request', 'Bad Request', detail);
}

/** How often at most store failures of Envoy's calls are logged: a store down fails every call. */
const STORE_REPORT_MS = 60_000;

/** Store failures on the log by their code, the first at once, then a line a minute with the count since. */
function storeFailures(log: ServerLog): (error: unknown) => void {
  return throttledReport(STORE_REPORT_MS, (error, failures) =>
    log.warn(
      { event: 'store-failure', service: 'envoy', failures, ...errorFields(error) },
      'the store failed: ShouldRateLimit answered UNAVAILABLE',
    ),
  );
}
