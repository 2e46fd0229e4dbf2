import type * as ioredis from 'ioredis';
import type * as pg from 'pg';
import type { Duration } from '../../core/duration.js';
import type { Store } from '../../stores/contract/store.js';
import { driverError, type DriverErrorRules, type DriverFailure } from '../../stores/shared/driver-error.js';
import { MemoryStore } from '../../stores/memory/store.js';
import type { CompiledPolicy } from '../policy/compile.js';
import type { StoreFile } from '../policy/model.js';
import { cachedReadiness, within } from './readiness.js';
import { StartError } from './start-error.js';
import { warmStore } from './warm.js';

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
  /**
   * True when the store answers within the decisions' deadline (for /readyz): asked at most
   * once per interval, on a connection no decision waits for.
   */
  ready(): Promise<boolean>;
  /**
   * Opens the decisions' connections and prepares their statements before the server says
   * where it listens, so that its first decisions under load do not wait for them.
   */
  warm?(compiled: CompiledPolicy): Promise<void>;
  close(): Promise<void>;
  /**
   * Why the store did not answer at start, in words (no address, no password): the server starts
   * anyway and each rule's failure policy answers until it does.
   */
  readonly unavailable?: string;
}

/**
 * Codes of a first connection that failed for a reason no wait will mend: a database that does
 * not exist, credentials the server refuses. The server does not start on them.
 */
const SETUP_FAILURES = new Set(['3D000', '28P01', '28000', 'WRONGPASS', 'NOAUTH']);

/**
 * What a failed first connection means: a StartError for a setup mistake, otherwise the reason
 * in words for the start-up warning. Said as the store's coded error says it (by code, never by
 * the driver's text, which may quote the URL).
 */
function firstFailure(type: string, error: unknown, rules: DriverErrorRules): string {
  const failure: DriverFailure = driverError(error, rules);
  if (failure.driverCode !== undefined && SETUP_FAILURES.has(failure.driverCode))
    throw new StartError(`sluice serve: the ${type} store cannot be used: ${failure.message}`);
  return failure.message;
}

/** How long the start waits for a shared store's first connection (the pool's connection timeout). */
const FIRST_CONNECTION_MS = 2000;
/** The decisions' pool of connections to PostgreSQL. */
export const DECISION_CONNECTIONS = 10;
/** The `application_name` of the decisions' connections to PostgreSQL. */
export const DECISION_APPLICATION = 'sluice';
/** The `application_name` of the one connection that checks readiness and migrates. */
export const READINESS_APPLICATION = 'sluice readiness';

/**
 * Opens the policy's store. A shared store that is down does not stop the server: it starts,
 * says why the store did not answer (`unavailable`), /readyz says "unavailable", and each rule's
 * failure policy answers (closed: 503) until the store is back; the client reconnects by itself.
 * A driver that is not installed does stop it (ioredis for Redis and pg for PostgreSQL are
 * optional peers of the package), and so does a database that does not exist or credentials
 * the store refuses.
 */
export async function openStore(config: StoreFile): Promise<OpenedStore> {
  if (config.type === 'memory') {
    return {
      store: new MemoryStore(),
      type: 'memory',
      view: () => new MemoryStore(),
      ready: async () => true,
      warm: async () => {},
      close: async () => {},
    };
  }
  return config.type === 'redis' ? openRedis(config) : openPostgres(config);
}

async function openRedis(config: Extract<StoreFile, { type: 'redis' }>): Promise<OpenedStore> {
  const { Redis } = await driver<typeof ioredis>('ioredis', 'redis');
  const { RedisStore } = await import('../../stores/redis/index.js');
  const { redisErrors } = await import('../../stores/redis/errors.js');
  // No offline queue: while Redis is down a decision fails at once (and the rule's failure
  // policy answers) instead of waiting in a queue; the client keeps reconnecting.
  const client = new Redis(config.url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => 500,
  });
  // Connection errors are what /readyz reports; logging each retry would flood the output. The
  // last one says, at start, why Redis did not answer.
  let lastError: unknown;
  client.on('error', (error: unknown) => (lastError = error));
  // The first connection is waited for (at most as long as PostgreSQL's), so that a server that
  // prints its address decides on Redis from its first request instead of failing it while the
  // connection is still being made; a Redis that is down does not stop the start.
  await within(
    client.connect().catch(() => {}),
    FIRST_CONNECTION_MS,
  );
  let unavailable: string | undefined;
  if (client.status !== 'ready') {
    try {
      unavailable = firstFailure('redis', lastError ?? new Error('no answer'), redisErrors);
    } catch (error) {
      client.disconnect();
      throw error;
    }
  }
  const view = () =>
    new RedisStore({
      client,
      ...(config.prefix === undefined ? {} : { prefix: config.prefix }),
      ...(config.timeout === undefined ? {} : { timeout: config.timeout as Duration }),
    });
  const store = view();
  return {
    store,
    type: 'redis',
    view,
    // One PING per interval on the shared connection: Redis has no pool a check could drain.
    ready: cachedReadiness(async () => (await client.ping()) === 'PONG', { deadlineMs: store.timeoutMs }),
    warm: async () => {},
    close: async () => {
      client.disconnect();
    },
    ...(unavailable === undefined ? {} : { unavailable }),
  };
}

async function openPostgres(config: Extract<StoreFile, { type: 'postgres' }>): Promise<OpenedStore> {
  const { default: driverPg } = await driver<{ default: typeof pg }>('pg', 'postgres');
  const { PostgresStore } = await import('../../stores/postgres/index.js');
  const { schemaNames } = await import('../../stores/postgres/migrations.js');
  const { postgresErrors } = await import('../../stores/postgres/errors.js');
  const pool = new driverPg.Pool({
    connectionString: config.url,
    max: DECISION_CONNECTIONS,
    connectionTimeoutMillis: FIRST_CONNECTION_MS,
    application_name: DECISION_APPLICATION,
  });
  pool.on('error', () => {});
  // Readiness and migrations have a connection of their own: /readyz needs no token, and a
  // check on the decisions' pool would hold a connection a decision waits for.
  const side = new driverPg.Pool({
    connectionString: config.url,
    max: 1,
    connectionTimeoutMillis: FIRST_CONNECTION_MS,
    application_name: READINESS_APPLICATION,
  });
  side.on('error', () => {});
  const schema = config.schema === undefined ? {} : { schema: config.schema };
  const view = () =>
    new PostgresStore({
      client: pool,
      ...schema,
      ...(config.timeout === undefined ? {} : { timeout: config.timeout as Duration }),
    });
  const store = view();
  const migrator = new PostgresStore({ client: side, ...schema });
  // The tables are created (or brought up to date) once the database answers: at start, or at
  // the first readiness check after it comes up; once done, never again.
  let migrated: Promise<unknown> | undefined;
  const migrate = () =>
    (migrated ??= migrator.migrate().catch((error: unknown) => {
      migrated = undefined;
      throw error;
    }));
  let unavailable: string | undefined;
  try {
    await migrate();
  } catch (error) {
    try {
      unavailable = firstFailure('postgres', error, postgresErrors);
    } catch (setup) {
      await Promise.all([pool.end(), side.end()]);
      throw setup;
    }
  }
  // One statement that reads every table decisions write: a lock that stalls them stalls it.
  const n = schemaNames(config.schema);
  const probe = `SELECT 1 FROM ${n.tokenBuckets}, ${n.windowCounters}, ${n.quotaCounters} LIMIT 0`;
  return {
    store,
    type: 'postgres',
    view,
    ready: cachedReadiness(
      async () => {
        await migrate();
        await side.query(probe);
        return true;
      },
      { deadlineMs: store.timeoutMs },
    ),
    warm: warmStore,
    close: async () => {
      await Promise.all([pool.end(), side.end()]);
    },
    ...(unavailable === undefined ? {} : { unavailable }),
  };
}

/** Imports a store's driver, an optional peer; missing, it is a StartError saying what to install. */
async function driver<T>(name: string, store: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch {
    throw new StartError(`sluice serve: the ${store} store needs the ${name} package: npm install ${name}`);
  }
}
