import { MAX_PENALTY_COUNT } from '../bounds.js';
import { makeDecision, type Decision } from '../decision.js';
import type { BucketState } from '../state.js';

/**
 * What {@link decideWindowCount} decides: the take and the window that counts it, by name, so
 * that two of its numbers cannot be swapped unnoticed.
 */
export interface WindowCountTake {
  /** The start of the window that counts, in ms, never earlier than the state's (see below). */
  readonly start: number;
  /** Milliseconds from now until that window ends. */
  readonly resetMs: number;
  /** The window's length in ms (a calendar period's varies: 23, 24 or 25 hours for a day). */
  readonly windowMs: number;
  /** The name of the limit, for the decision. Never holds the key. */
  readonly name: string;
  /** Units the take asks for (0: a peek). */
  readonly cost: number;
  /** The count the window admits: the rule's limit or the per-call one. */
  readonly quota: number;
  /** Whether an admitted take is charged (and a refused one under `penalty`). */
  readonly commit: boolean;
  /** Whether a committed refusal is charged too. */
  readonly penalty: boolean;
}

/**
 * Decides a take against a count per window (a fixed window, a calendar quota): the shared half
 * of both, once each has found the window that counts. `take.start` is that window's start, never
 * earlier than `state.window` (windows never move backwards); a count of an earlier window is
 * spent. With `commit`, an admitted take is charged, and a refused one too under `penalty`
 * (saturating at {@link MAX_PENALTY_COUNT}).
 */
export function decideWindowCount(state: BucketState, take: WindowCountTake): Decision {
  const { start, resetMs, windowMs, name, cost, quota } = take;
  const used = state.window === start ? state.value : 0;
  const asked = cost === 0 ? 1 : cost;
  const left = used >= quota ? 0 : quota - used;
  // One exit below, so that every outcome builds its decision in the one place.
  let allowed = false;
  let remaining = left;
  let retryAfterMs = resetMs;

  if (asked > quota) retryAfterMs = Infinity;
  else if (asked <= left) {
    allowed = true;
    retryAfterMs = 0;
    if (cost > 0) {
      remaining = left - cost;
      if (take.commit) {
        state.value = used + cost;
        state.window = start;
      }
    }
  } else if (take.commit && take.penalty && cost > 0) {
    const charged = used + cost;
    state.value = charged < MAX_PENALTY_COUNT ? charged : MAX_PENALTY_COUNT;
    state.window = start;
  }
  return makeDecision({
    allowed,
    name,
    limit: quota,
    capacity: quota,
    remaining,
    cost,
    retryAfterMs,
    resetMs,
    windowMs,
  });
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
