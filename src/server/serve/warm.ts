import type { CompiledPolicy } from '../policy/compile.js';
import { within } from './readiness.js';

/** How long the start spends at most warming the decisions' connections. */
const WARM_MS = 2000;

/**
 * Warms the store of the policy before the server prints its address: the PostgreSQL store opens
 * every connection of the decisions' pool and prepares each rule's take statements on them,
 * charging nothing (`PostgresStore.warm`). Otherwise the pool would open connections (and the
 * server plan statements) in the time of the first decisions under load, which then fail their
 * deadline. Bounded in time; failures are ignored (a store that is down is what /readyz and the
 * failure policies report).
 */
export async function warmStore(compiled: CompiledPolicy): Promise<void> {
  const warming = compiled.store.warm?.();
  if (warming === undefined) return;
  await within(
    warming.catch(() => {}),
    WARM_MS,
  );
}
