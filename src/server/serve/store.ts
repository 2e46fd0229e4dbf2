import type * as ioredis from 'ioredis';
import type * as pg from 'pg';
import type { Duration } from '../../core/duration.js';
import type { Store } from '../../store.js';
import { MemoryStore } from '../../stores/memory.js';
import type { StoreFile } from '../policy/model.js';
import { StartError } from './start-error.js';

/** A store opened from the policy, with its health check and its end. */
export interface OpenedStore {
  readonly store: Store;
  readonly type: StoreFile['type'];
  /**
   * Another store object on the same connection (and prefix or schema): a reload binds the
   * limits it builds anew there, beside the limits it keeps, which stay bound to theirs. On a
   * shared store a limit of the same name finds the same buckets; in memory it starts afresh.
   */
  view(): Store;
  /** True when the store answers now (for /readyz). */
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

/** How long /readyz waits for the store before it says "unavailable". */
const READY_TIMEOUT_MS = 1000;
/** How long the start waits for a shared store's first connection (the pool's connection timeout). */
const FIRST_CONNECTION_MS = 2000;

/**
 * Opens the policy's store. A shared store that is down does not stop the server: it starts,
 * /readyz says "unavailable", and each rule's failure policy answers (closed: 503) until the
 * store is back; the client reconnects by itself. A driver that is not installed does stop it:
 * ioredis for Redis and pg for PostgreSQL are optional peers of the package.
 */
export async function openStore(config: StoreFile): Promise<OpenedStore> {
  if (config.type === 'memory') {
    return {
      store: new MemoryStore(),
      type: 'memory',
      view: () => new MemoryStore(),
      ready: async () => true,
      close: async () => {},
    };
  }
  return config.type === 'redis' ? openRedis(config) : openPostgres(config);
}

async function openRedis(config: Extract<StoreFile, { type: 'redis' }>): Promise<OpenedStore> {
  const { Redis } = await driver<typeof ioredis>('ioredis', 'redis');
  const { RedisStore } = await import('../../stores/redis/index.js');
  // No offline queue: while Redis is down a decision fails at once (and the rule's failure
  // policy answers) instead of waiting in a queue; the client keeps reconnecting.
  const client = new Redis(config.url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => 500,
  });
  // Connection errors are what /readyz reports; logging each retry would flood the output.
  client.on('error', () => {});
  // The first connection is waited for (at most as long as PostgreSQL's), so that a server that
  // prints its address decides on Redis from its first request instead of failing it while the
  // connection is still being made; a Redis that is down does not stop the start.
  await within(
    client.connect().catch(() => {}),
    FIRST_CONNECTION_MS,
  );
  const view = () =>
    new RedisStore({
      client,
      ...(config.prefix === undefined ? {} : { prefix: config.prefix }),
      ...(config.timeout === undefined ? {} : { timeout: config.timeout as Duration }),
    });
  return {
    store: view(),
    type: 'redis',
    view,
    ready: () => answers(async () => (await client.ping()) === 'PONG'),
    close: async () => {
      client.disconnect();
    },
  };
}

async function openPostgres(config: Extract<StoreFile, { type: 'postgres' }>): Promise<OpenedStore> {
  const { default: driverPg } = await driver<{ default: typeof pg }>('pg', 'postgres');
  const { PostgresStore } = await import('../../stores/postgres/index.js');
  const pool = new driverPg.Pool({
    connectionString: config.url,
    max: 10,
    connectionTimeoutMillis: FIRST_CONNECTION_MS,
  });
  pool.on('error', () => {});
  const view = () =>
    new PostgresStore({
      client: pool,
      ...(config.schema === undefined ? {} : { schema: config.schema }),
      ...(config.timeout === undefined ? {} : { timeout: config.timeout as Duration }),
    });
  const store = view();
  // The tables are created (or brought up to date) once the database answers: at start, or at
  // the first readiness check after it comes up.
  let migrated: Promise<unknown> | undefined;
  const migrate = () =>
    (migrated ??= store.migrate().catch((error: unknown) => {
      migrated = undefined;
      throw error;
    }));
  await migrate().catch(() => {});
  return {
    store,
    type: 'postgres',
    view,
    ready: () =>
      answers(async () => {
        await migrate();
        await pool.query('SELECT 1');
        return true;
      }),
    close: () => pool.end(),
  };
}

/** True when `check` says so within the readiness timeout; false when it fails or takes longer. */
async function answers(check: () => Promise<boolean>): Promise<boolean> {
  return (
    (await within(
      check().catch(() => false),
      READY_TIMEOUT_MS,
    )) ?? false
  );
}

/** What `work` resolves to within `ms`, else undefined (the work goes on unwatched). */
async function within<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Imports a store's driver, an optional peer; missing, it is a StartError saying what to install. */
async function driver<T>(name: string, store: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch {
    throw new StartError(`sluice serve: the ${store} store needs the ${name} package: npm install ${name}`);
  }
}
