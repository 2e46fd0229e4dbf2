/**
 * Run by Bun and Deno (test/runtimes/*.test.ts), not by node: the Redis store's conformance
 * suite on the local Redis through ioredis and node-redis, as an application on those runtimes
 * would connect.
 */
import { redisUrl, skipUnlessReachable } from '../support/services.js';
import { ioredisClient, nodeRedisClient } from '../support/redis-clients.js';
import { redisConformance } from '../support/redis-conformance.js';

const skip = await skipUnlessReachable('redis', redisUrl);
const runtime = typeof (globalThis as { Bun?: unknown }).Bun === 'object' ? 'bun' : 'deno';

redisConformance(`redis on ${runtime} (ioredis)`, skip, async () => {
  const client = await ioredisClient(redisUrl);
  return { client, quit: () => client.quit() };
});
redisConformance(`redis on ${runtime} (node-redis)`, skip, async () => {
  const client = await nodeRedisClient(redisUrl);
  return { client, quit: () => client.quit() };
});
