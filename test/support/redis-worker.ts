/**
 * One worker process of the cross-process exactness test (several processes taking at once from
 * one shared store admit exactly the limit between them, not the limit each): connects its own
 * client, says "ready", waits for "go" on stdin, fires `count` concurrent takes on one key and prints
 * how many were admitted as JSON.
 *
 * argv: <"single" | "cluster"> <url or JSON nodes> <prefix> <rule name> <count> <burst>
 */
import { createLimiter, tokenBucket } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { ioredisClient, ioredisCluster } from './redis-clients.js';

const [mode, target, prefix, name, count, burst] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
];
const client = mode === 'cluster' ? await ioredisCluster(JSON.parse(target)) : await ioredisClient(target);
const store = new RedisStore({ client, prefix, timeout: '5s' });
const limiter = createLimiter({
  name,
  rule: tokenBucket({ limit: Number(burst), period: '1h' }),
  store,
  timeout: '5s',
});
process.stdout.write('ready\n');
process.stdin.once('data', async () => {
  const results = await Promise.allSettled(Array.from({ length: Number(count) }, () => limiter.take('hot')));
  const admitted = results.filter((r) => r.status === 'fulfilled' && r.value.allowed).length;
  const errors = results.filter((r) => r.status === 'rejected').length;
  process.stdout.write(`${JSON.stringify({ admitted, errors })}\n`);
  await client.quit();
  process.exit(0);
});
