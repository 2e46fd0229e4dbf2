import type * as pg from 'pg';
import type { Limiter } from '../../limiter/limiter.js';
import type { CompiledPolicy } from '../policy/compile.js';
import { within } from './readiness.js';

/** How long the start spends at most warming the decisions' connections. */
const WARM_MS = 2000;
/** A key no client can send through the server as it is stored (peeks charge nothing anyway). */
const WARM_KEY = 'sluice:warm-up';

/**
 * Opens every connection of the decisions' pool at once, then peeks each limit of the policy
 * as many times at once as there are connections: the pool would otherwise open a connection
 * (and the server plan each statement on it) in the time of the first decisions under load,
 * which then fail their deadline. A peek charges nothing. Bounded in time; failures are
 * ignored (a store that is down is what /readyz and the failure policies report).
 */
export async function warmPostgres(
  pool: pg.Pool,
  connections: number,
  compiled: CompiledPolicy,
): Promise<void> {
  await within(warm(pool, connections, compiled), WARM_MS);
}

async function warm(pool: pg.Pool, connections: number, compiled: CompiledPolicy): Promise<void> {
  const opened = await Promise.allSettled(Array.from({ length: connections }, () => pool.connect()));
  const clients = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
  try {
    await Promise.allSettled(clients.map((client) => client.query('SELECT 1')));
  } finally {
    for (const client of clients) client.release();
  }
  const limiters = new Set<Limiter>();
  for (const rule of compiled.rules) for (const limiter of rule.limiters) limiters.add(limiter);
  for (const limiter of limiters)
    await Promise.allSettled(Array.from({ length: connections }, () => limiter.peek(WARM_KEY)));
  // The take statements too (the store prepares them on every connection, charging nothing).
  await compiled.store.warm?.().catch(() => {});
}
