/**
 * `sluice/redis`: the Redis store. Needs `ioredis` or `redis` (node-redis v5), optional peer
 * dependencies you install yourself.
 *
 * @example
 * import { RedisStore } from 'sluice/redis';
 *
 * Internals (the Lua scripts and their SHAs, the algorithm modules, Cluster slot hashing) stay in
 * their modules: they change with every new algorithm and are no API.
 *
 * @module sluice/redis
 */
export { RedisStore, type RedisStoreOptions, type RedisHashTag } from './store.js';
export { RedisRuleBuckets } from './rule-buckets.js';
export {
  redisClient,
  type RedisClient,
  type RedisClientInput,
  type IoredisLike,
  type NodeRedisLike,
} from './client.js';
