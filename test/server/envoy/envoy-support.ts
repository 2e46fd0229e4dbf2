/**
 * `sluice serve` with Envoy's rate limit service as a child process, its clock in a file the test
 * moves, and a gRPC client that plays Envoy (requests encoded as Envoy's rate limit client does).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { startSluice, type RunningSluice } from '../serve-support.js';
import { decodeResponse, encodeRequest, fieldsOf, type DecodedResponse, type EnvoyRequest } from './wire.js';

export interface EnvoySluice {
  sluice: RunningSluice;
  /** host:port of the gRPC service. */
  address: string;
  /** Sets the service's clock (ms since the epoch). */
  setTime(ms: number): void;
  /** ShouldRateLimit as Envoy calls it; a failed call resolves to its gRPC status. */
  call(request: EnvoyRequest, deadlineMs?: number): Promise<DecodedResponse>;
  callError(request: EnvoyRequest, deadlineMs?: number): Promise<ServiceError>;
  /** grpc.health.v1.Health/Check: 1 SERVING, 2 NOT_SERVING; a failure resolves to its code as a negative. */
  health(service?: string): Promise<number>;
  /** The first status grpc.health.v1.Health/Watch sends. */
  watchOnce(service?: string): Promise<number>;
  stop(): Promise<void>;
}

/** A fixed instant: 2026-01-01T00:00:00Z, the start of every window of a second to a day. */
export const START = Date.UTC(2026, 0, 1);

const METHOD = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

export async function startEnvoySluice(
  policy: string,
  args: string[] = ['--grpc-port', '0'],
  env: Record<string, string> = {},
): Promise<EnvoySluice> {
  const clockFile = join(mkdtempSync(join(tmpdir(), 'sluice-clock-')), 'now');
  writeFileSync(clockFile, String(START));
  const sluice = await startSluice(policy, args, { SLUICE_TEST_CLOCK_FILE: clockFile, ...env });
  const found = /Envoy's rate limit service \(gRPC\) on (\S+)/.exec(sluice.output());
  if (found === null) {
    await sluice.stop();
    throw new Error(`no gRPC address in:\n${sluice.output()}`);
  }
  const address = found[1]!;
  const client = new Client(address, credentials.createInsecure());
  const unary = <T>(method: string, body: Buffer, decode: (b: Buffer) => T, deadlineMs: number) =>
    new Promise<T>((resolve, reject) =>
      client.makeUnaryRequest(
        method,
        (b: Buffer) => b,
        decode,
        body,
        new Metadata(),
        { deadline: Date.now() + deadlineMs },
        (error, value) => (error !== null ? reject(error) : resolve(value!)),
      ),
    );
  const call = (request: EnvoyRequest, deadlineMs = 10_000) => {
    for (const d of request.descriptors)
      sluice.sensitive(...d.entries.map(([, v]) => v).filter((v) => v.length > 3));
    return unary(METHOD, encodeRequest(request), decodeResponse, deadlineMs);
  };
  return {
    sluice,
    address,
    setTime: (ms) => writeFileSync(clockFile, String(ms)),
    call,
    callError: (request, deadlineMs) =>
      call(request, deadlineMs).then(
        () => {
          throw new Error('the call succeeded');
        },
        (error: ServiceError) => error,
      ),
    health: (service = '') => {
      const body =
        service === '' ? Buffer.alloc(0) : Buffer.from([10, service.length, ...Buffer.from(service)]);
      return unary(
        '/grpc.health.v1.Health/Check',
        body,
        (b) => Number(fieldsOf(b).get(1)?.[0] ?? 0n),
        10_000,
      ).catch((error: ServiceError) => -error.code);
    },
    watchOnce: (service = '') =>
      new Promise<number>((resolve, reject) => {
        const body =
          service === '' ? Buffer.alloc(0) : Buffer.from([10, service.length, ...Buffer.from(service)]);
        const stream = client.makeServerStreamRequest(
          '/grpc.health.v1.Health/Watch',
          (b: Buffer) => b,
          (b: Buffer) => Number(fieldsOf(b).get(1)?.[0] ?? 0n),
          body,
          new Metadata(),
          { deadline: Date.now() + 10_000 },
        );
        stream.once('data', (status: number) => {
          resolve(status);
          stream.cancel();
        });
        stream.once('error', (error: ServiceError) => {
          if (error.code !== 1) reject(error);
        });
      }),
    stop: async () => {
      client.close();
      await sluice.stop();
    },
  };
}

/** One descriptor of these entries. */
export function descriptor(...entries: [string, string][]) {
  return { entries };
}
