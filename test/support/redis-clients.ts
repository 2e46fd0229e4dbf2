/**
 * Real Redis clients for the store tests (never mocks): ioredis and node-redis, connected and
 * ready before use, plus cleanup of a run's keys.
 */
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';

/** An ioredis client that is ready (fail-fast: no offline queue). */
export async function ioredisClient(url: string): Promise<Redis> {
  const client = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => 50,
  });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** A node-redis v5 client that is ready. */
export async function nodeRedisClient(url: string) {
  const client = createClient({ url, socket: { reconnectStrategy: () => 50 } });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** An ioredis Cluster client that is ready. */
export async function ioredisCluster(nodes: { host: string; port: number }[]): Promise<Cluster> {
  const cluster = new Cluster(nodes, {
    lazyConnect: true,
    enableOfflineQueue: false,
    redisOptions: { maxRetriesPerRequest: 0 },
  });
  cluster.on('error', () => {});
  await cluster.connect();
  return cluster;
}

/** A node-redis v5 cluster client that is ready. */
export async function nodeRedisCluster(nodes: { host: string; port: number }[]) {
  const cluster = createCluster({ rootNodes: nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })) });
  cluster.on('error', () => {});
  await cluster.connect();
  return cluster;
}

/** Deletes every key matching `pattern` (tests only: SCAN is fine on a test server). */
export async function deleteKeys(client: Redis, pattern: string): Promise<number> {
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) deleted += await client.del(...keys);
  } while (cursor !== '0');
  return deleted;
}
