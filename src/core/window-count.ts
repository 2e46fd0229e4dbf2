import { MAX_PENALTY_COUNT } from './bounds.js';
import { makeDecision, type Decision } from './decision.js';
import type { BucketState } from './state.js';

/**
 * Decides a take against a count per window (a fixed window, a calendar quota): the shared half
 * of both, once each has found the window that counts. `start` is that window's start, never
 * earlier than `state.window` (windows never move backwards); a count of an earlier window is
 * spent. With `commit`, an admitted take is charged, and a refused one too under `penalty`
 * (saturating at {@link MAX_PENALTY_COUNT}).
 */
export function decideWindowCount(
  state: BucketState,
  start: number,
  resetMs: number,
  windowMs: number,
  name: string,
  cost: number,
  quota: number,
  commit: boolean,
  penalty: boolean,
): Decision {
  const used = state.window === start ? state.value : 0;
  const asked = cost === 0 ? 1 : cost;
  const left = used >= quota ? 0 : quota - used;

  if (asked > quota) return makeDecision(false, name, quota, quota, left, cost, Infinity, resetMs, windowMs);
  if (asked <= left) {
    if (cost === 0) return makeDecision(true, name, quota, quota, left, 0, 0, resetMs, windowMs);
    if (commit) {
      state.value = used + cost;
      state.window = start;
    }
    return makeDecision(true, name, quota, quota, left - cost, cost, 0, resetMs, windowMs);
  }
  if (commit && penalty && cost > 0) {
    const charged = used + cost;
    state.value = charged < MAX_PENALTY_COUNT ? charged : MAX_PENALTY_COUNT;
    state.window = start;
  }
  return makeDecision(false, name, quota, quota, left, cost, resetMs, resetMs, windowMs);
}
