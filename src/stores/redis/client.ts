import { SluiceError, configError } from '../../core/errors.js';

/**
 * The few Redis commands the store uses, whatever the client library. Build one with
 * {@link redisClient} from an ioredis or node-redis client, or implement it for another client.
 *
 * @example
 * const client: RedisClient = redisClient(new Redis({ enableOfflineQueue: false }));
 */
export interface RedisClient {
  /** True for a Redis Cluster client: batches are then split by hash slot. */
  readonly cluster: boolean;
  /** False while the connection is down: the store then fails fast instead of queueing. */
  ready(): boolean;
  /** `EVALSHA sha numkeys ...keys ...args`. Rejects with the server's error (e.g. NOSCRIPT). */
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  /** `EVAL script numkeys ...keys ...args`. */
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  /** `DEL ...keys` (keys of one slot on a Cluster); resolves to the number deleted. */
  del(keys: string[]): Promise<number>;
}

/** The part of an ioredis `Redis` or `Cluster` client the store uses. */
export interface IoredisLike {
  readonly status: string;
  readonly isCluster: boolean;
  readonly options?: { keyPrefix?: string };
  evalsha(sha: string, numkeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  eval(script: string, numkeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  del(...keys: string[]): Promise<number>;
}

/** The part of a node-redis v5 client (`createClient` or `createCluster`) the store uses. */
export interface NodeRedisLike {
  readonly isOpen: boolean;
  readonly isReady?: boolean;
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  del(keys: string[]): Promise<number>;
}

/** What `RedisStore` accepts as `client`. */
export type RedisClientInput = IoredisLike | NodeRedisLike | RedisClient;

/**
 * Wraps an ioredis (`Redis`, `Cluster`) or node-redis v5 (`createClient`, `createCluster`) client
 * in the narrow {@link RedisClient} type; a `RedisClient` is returned as it is.
 *
 * @throws SluiceError `SLUICE_CONFIG` for anything else, or for an ioredis `keyPrefix` (the store
 *   must see the real key names to keep a cascade's keys in one Cluster slot; use `prefix`).
 * @example
 * const client = redisClient(createClient({ url }));
 */
export function redisClient(input: RedisClientInput): RedisClient {
  if (typeof input !== 'object' || input === null) {
    throw configError('RedisStore client', 'an ioredis or node-redis client', input);
  }
  const candidate = input as Partial<RedisClient & IoredisLike & NodeRedisLike>;
  if (typeof candidate.ready === 'function' && typeof candidate.evalsha === 'function') {
    return input as RedisClient;
  }
  if (typeof candidate.evalSha === 'function' && typeof candidate.del === 'function') {
    return nodeRedisClient(input as NodeRedisLike);
  }
  if (typeof candidate.evalsha === 'function' && typeof candidate.status === 'string') {
    const ioredis = input as IoredisLike;
    if (ioredis.options?.keyPrefix) {
      throw new SluiceError(
        'SLUICE_CONFIG',
        'RedisStore: the ioredis client has a keyPrefix; use the store option `prefix` instead, so that Cluster hash tags stay correct',
      );
    }
    return ioredisClient(ioredis);
  }
  throw configError('RedisStore client', 'an ioredis or node-redis client', input);
}

function ioredisClient(client: IoredisLike): RedisClient {
  return {
    cluster: client.isCluster === true,
    ready: () => client.status === 'ready',
    evalsha: (sha, keys, args) => client.evalsha(sha, keys.length, ...keys, ...args),
    eval: (script, keys, args) => client.eval(script, keys.length, ...keys, ...args),
    del: (keys) => client.del(...keys),
  };
}

function nodeRedisClient(client: NodeRedisLike): RedisClient {
  // A node-redis cluster has no isReady; its isOpen turns false when it is closed.
  const standalone = typeof client.isReady === 'boolean';
  return {
    cluster: !standalone,
    ready: standalone ? () => client.isReady === true : () => client.isOpen,
    evalsha: (sha, keys, args) => client.evalSha(sha, { keys, arguments: args }),
    eval: (script, keys, args) => client.eval(script, { keys, arguments: args }),
    del: (keys) => client.del(keys),
  };
}
