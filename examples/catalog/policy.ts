/**
 * The tutorial's rate-limit contract for the catalog, as code:
 *
 *   subject: u17 · capacity: 10 · refill: 1 token / second · cost: 1 token / protected write attempt
 *
 * One write budget per subject, whatever session or token it uses; reads and polling get their
 * own budget so that a busy UI never spends the attempts to write.
 */
import { MemoryStore, createLimiter, tokenBucket, type Clock, type Store } from '../../src/index.js';

export function catalogLimits(clock: Clock, store: Store = new MemoryStore()) {
  return {
    /** Creating and editing courses and starting exports: one budget. */
    writes: createLimiter({
      name: 'writes',
      rule: tokenBucket({ limit: 1, period: '1s', burst: 10 }),
      store,
      clock,
    }),
    /** Public reads and status polling: 60 a minute, never charged to `writes`. */
    reads: createLimiter({ name: 'reads', rule: tokenBucket({ limit: 60, period: '1m' }), store, clock }),
  };
}

/** The tutorial's 429 body; `Retry-After` and `Cache-Control: no-store` come with it. */
export const writeProblem = {
  type: 'https://catalog.example/problems/write-rate-limit',
  title: 'Исчерпан бюджет изменений',
  detail: 'Подождите перед следующей попыткой записи.',
};
