/**
 * The store conformance suite on the local Redis through a client the caller connects: the
 * Redis store's tests run it on node, and test/runtimes/ on Bun and Deno. Every store gets a
 * prefix of its own under this run's, deleted afterwards.
 */
import type { Redis } from 'ioredis';
import { RedisStore } from '../../src/stores/redis/index.js';
import { storeConformance } from '../../src/testing/index.js';
import { deleteKeys, ioredisClient } from './redis-clients.js';
import { redisUrl, runId } from './services.js';

/** A connected client and how to close it. */
export interface RedisConnection {
  client: unknown;
  quit(): Promise<unknown>;
}

const prefixRoot = `sluice-test:${runId}:conformance:`;
let stores = 0;

/** Registers the store conformance suite as `name` on a RedisStore over `connect()`'s client. */
export function redisConformance(
  name: string,
  skip: string | false,
  connect: () => Promise<RedisConnection>,
): void {
  let connection: RedisConnection | undefined;
  let cleaner: Redis | undefined;
  storeConformance({
    name,
    skip,
    // A loaded 2-core CI machine can take longer than the 100 ms production default.
    timeout: '2s',
    async setup() {
      connection = await connect();
      cleaner = await ioredisClient(redisUrl);
    },
    async create() {
      return new RedisStore({
        client: connection!.client as never,
        timeSource: 'app',
        timeout: '2s',
        prefix: `${prefixRoot}c${++stores}:`,
      });
    },
    async teardown() {
      await deleteKeys(cleaner!, `${prefixRoot}*`);
      await connection?.quit();
      await cleaner?.quit();
    },
  });
}
