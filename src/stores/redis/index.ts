/**
 * `sluice/redis`: the Redis store. Needs `ioredis` or `redis` (node-redis v5), optional peer
 * dependencies you install yourself.
 *
 * @example
 * import { RedisStore } from 'sluice/redis';
 */
export { RedisStore, RedisRuleBuckets, type RedisStoreOptions, type RedisHashTag } from './redis-store.js';
export {
  redisClient,
  type RedisClient,
  type RedisClientInput,
  type IoredisLike,
  type NodeRedisLike,
} from './redis-client.js';
export { keySlot } from './key-slot.js';
export {
  decisionScript,
  decisionScriptSha,
  singleDecisionScript,
  singleDecisionScriptSha,
} from './scripts.js';
