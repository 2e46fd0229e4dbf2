import { fileURLToPath } from 'node:url';
import {
  Server,
  ServerCredentials,
  status as grpcStatus,
  loadPackageDefinition,
  type ServiceDefinition,
  type ServerUnaryCall,
  type ServerWritableStream,
  type sendUnaryData,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { isSluiceError } from '../../core/errors.js';
import type { RequestMessage, ResponseMessage } from './messages.js';
import type { CallResult, EnvoyMetrics } from './metrics.js';
import type { EnvoyService, ServedEnvoy } from './service.js';

/**
 * The protos' folder: beside this module in the sources, `protos/` beside the bundle once built
 * (tsup copies it there).
 */
export const PROTO_DIR = fileURLToPath(new URL('./protos/', import.meta.url));

/** Field names as in the .proto files, enums by name, absent messages as null (not defaults). */
const LOADER_OPTIONS = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
};

type Lookup = Record<string, Record<string, { service: ServiceDefinition }>>;

/** The service definitions of Envoy's rate limit service and of gRPC health checking. */
export function loadServices(): { rateLimit: ServiceDefinition; health: ServiceDefinition } {
  const definition = loadSync(
    ['envoy/service/ratelimit/v3/rls.proto', 'grpc/health/v1/health.proto'],
    LOADER_OPTIONS,
  );
  const loaded = loadPackageDefinition(definition) as unknown as {
    envoy: { service: { ratelimit: { v3: Lookup[string] } } };
    grpc: { health: { v1: Lookup[string] } };
  };
  return {
    rateLimit: loaded.envoy.service.ratelimit.v3.RateLimitService!.service,
    health: loaded.grpc.health.v1.Health!.service,
  };
}

/** What the gRPC server needs. */
export interface GrpcOptions {
  readonly host: string;
  readonly port: number;
  readonly service: EnvoyService;
  readonly metrics: EnvoyMetrics;
  /** The configuration of the policy served now; undefined when none is loaded. */
  served(): ServedEnvoy | undefined;
  /** True when the store answers. */
  ready(): Promise<boolean>;
  /** Told of an error that was no request's fault (an INTERNAL answer). */
  failed(error: unknown): void;
  /** Told of a store that failed or did not answer in time (an UNAVAILABLE answer). */
  storeFailed(error: unknown): void;
}

/** How often a Watch looks at the health again. */
const WATCH_INTERVAL_MS = 5000;

/** Names the health service answers for: the whole server, upstream's `ratelimit`, and the service's own. */
const HEALTH_NAMES = new Set(['', 'ratelimit', 'envoy.service.ratelimit.v3.RateLimitService']);

/**
 * Starts the gRPC server: ShouldRateLimit, and health (SERVING once a configuration with a domain
 * is loaded and the store answers). Resolves with the port it listens on.
 */
export async function listenGrpc(options: GrpcOptions): Promise<{ port: number; close(): Promise<void> }> {
  const { rateLimit, health: healthService } = loadServices();
  const server = new Server();
  const health = async (): Promise<string> => {
    const loaded = (options.served()?.domains.size ?? 0) > 0;
    return loaded && (await options.ready()) ? 'SERVING' : 'NOT_SERVING';
  };
  /** How each Watch stream is ended: they would hold the server's shutdown open. */
  const watching = new Set<() => void>();
  server.addService(rateLimit, {
    ShouldRateLimit: (
      call: ServerUnaryCall<RequestMessage, ResponseMessage>,
      callback: sendUnaryData<ResponseMessage>,
    ) => {
      const started = performance.now();
      options.service.shouldRateLimit(call.request, options.served()).then(
        (response) => {
          options.metrics.call(
            response.overall_code === 'OVER_LIMIT' ? 'over_limit' : 'ok',
            elapsed(started),
          );
          callback(null, response);
        },
        (error: unknown) => {
          const { code, result, details } = grpcError(error);
          if (code === grpcStatus.INTERNAL) options.failed(error);
          else if (isSluiceError(error) && error.code.startsWith('SLUICE_STORE_')) options.storeFailed(error);
          options.metrics.call(result, elapsed(started));
          callback({ code, details });
        },
      );
    },
  });
  server.addService(healthService, {
    Check: (call: ServerUnaryCall<{ service: string }, unknown>, callback: sendUnaryData<unknown>) => {
      if (!HEALTH_NAMES.has(call.request.service))
        return callback({ code: grpcStatus.NOT_FOUND, details: 'no such service' });
      void health().then((status) => callback(null, { status }));
    },
    // The status now, then each change (looked at every few seconds), until the caller leaves or
    // the server stops; an unknown service is SERVICE_UNKNOWN, as the protocol says.
    Watch: (call: ServerWritableStream<{ service: string }, unknown>) => {
      if (!HEALTH_NAMES.has(call.request.service)) {
        call.write({ status: 'SERVICE_UNKNOWN' });
        return;
      }
      let last: string | undefined;
      const look = () =>
        void health().then((status) => {
          if (status === last || call.cancelled) return;
          last = status;
          call.write({ status });
        });
      const timer = setInterval(look, WATCH_INTERVAL_MS);
      const stop = () => {
        clearInterval(timer);
        watching.delete(end);
      };
      const end = () => {
        stop();
        call.end();
      };
      watching.add(end);
      call.on('cancelled', stop);
      look();
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      `${hostOf(options.host)}:${options.port}`,
      ServerCredentials.createInsecure(),
      (error, bound) => (error === null ? resolve(bound) : reject(error)),
    ),
  );
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const end of [...watching]) end();
        // Calls in flight finish; a call that outlives the grace is cut (Watch streams among them).
        const grace = setTimeout(() => server.forceShutdown(), 5000);
        server.tryShutdown(() => {
          clearTimeout(grace);
          resolve();
        });
      }),
  };
}

function hostOf(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

function elapsed(started: number): number {
  return (performance.now() - started) / 1000;
}

/**
 * A failed call's gRPC status: a request Envoy's API does not allow is INVALID_ARGUMENT; a store
 * that failed or timed out and a server with no configuration are UNAVAILABLE (Envoy's
 * failure_mode_deny decides), never OVER_LIMIT; anything else INTERNAL, without its message.
 */
export function grpcError(error: unknown): { code: grpcStatus; result: CallResult; details: string } {
  if (isSluiceError(error) && error.status === 400)
    return { code: grpcStatus.INVALID_ARGUMENT, result: 'invalid_argument', details: error.message };
  if (isSluiceError(error) && error.status === 503)
    return { code: grpcStatus.UNAVAILABLE, result: 'unavailable', details: error.message };
  return { code: grpcStatus.INTERNAL, result: 'internal', details: 'internal error' };
}
