/**
 * One waiter of the fairness test: connects its own client to the shared store, says "ready",
 * waits for "go" on stdin, then waits for a slot on the shared key and prints, as JSON, when
 * its reservation was answered (by this machine's clock), how long it waited, and when it was
 * served.
 *
 * argv: <"redis" | "postgres"> <prefix or schema> <rule name>
 */
import pg from 'pg';
import { createLimiter, tokenBucket, type Store } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { ioredisClient } from '../support/redis-clients.js';
import { postgresUrl, redisUrl } from '../support/services.js';

const [kind, where, name] = process.argv.slice(2) as [string, string, string];
let store: Store;
let quit: () => Promise<unknown>;
if (kind === 'redis') {
  const client = await ioredisClient(redisUrl);
  store = new RedisStore({ client, prefix: where, timeout: '5s' });
  quit = () => client.quit();
} else {
  const pool = new pg.Pool({ connectionString: postgresUrl, max: 2 });
  store = new PostgresStore({ client: pool, schema: where, timeout: '5s' });
  quit = () => pool.end();
}
// Two a second, one at a time: the slots are half a second apart.
const limiter = createLimiter({
  name,
  rule: tokenBucket({ limit: 2, period: '1s', burst: 1 }),
  store,
  timeout: '5s',
});
let reservedAt = 0;
limiter.events.subscribe(() => (reservedAt = Date.now()));
process.stdout.write('ready\n');
process.stdin.once('data', async () => {
  const { decision, waitedMs } = await limiter.takeOrWait('shared', { maxWait: '10s' });
  const servedAt = Date.now();
  process.stdout.write(`${JSON.stringify({ allowed: decision.allowed, reservedAt, waitedMs, servedAt })}\n`);
  await quit();
  process.exit(0);
});
