import { MAX_PENALTY_COUNT } from '../bounds.js';
import { makeDecision, type Decision } from '../decision.js';
import type { BucketState } from '../state.js';

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

/**
 * Settles a take against a count per window (a fixed window, a calendar quota), the shared half
 * of both once each has found its windows: `taken` is the window the take counted in, `start`
 * the window that counts now (never earlier than `state.window`). A refund (`delta < 0`) comes
 * off the count only while the take's window is the state's, never below 0; a charge
 * (`delta > 0`) goes to the current window, saturating at {@link MAX_PENALTY_COUNT}.
 */
export function adjustWindowCount(state: BucketState, taken: number, start: number, delta: number): boolean {
  if (delta < 0) {
    if (state.window !== taken || !(state.value > 0)) return false;
    const left = state.value + delta;
    state.value = left > 0 ? left : 0;
    return true;
  }
  if (delta === 0) return false;
  const charged = (state.window === start ? state.value : 0) + delta;
  state.value = charged < MAX_PENALTY_COUNT ? charged : MAX_PENALTY_COUNT;
  state.window = start;
  return true;
}
