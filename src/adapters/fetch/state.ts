/**
 * What sluice/fetch keeps about one request between the limit and `finish`: the peer address its
 * server handed over, the outcome of the last limit that admitted it (`rateLimitOf`), and each
 * limit's admitted outcome until its `finish`. Held with the `Request` in a `requestSlot`, as the
 * guard keeps its charges: a WeakMap entry per request costs the garbage collector more than the
 * rest of the limit.
 */
import type { RequestRateLimit } from '../../http/guard.js';
import type { HeaderValues } from '../../http/headers.js';
import { requestSlot } from '../../http/request-slot.js';

/** An admitted outcome, with the headers `finish` adds. */
export type Admitted = RequestRateLimit & { readonly headers: HeaderValues };

interface Pending {
  readonly limit: object;
  readonly outcome: Admitted;
  next: Pending | undefined;
}

/** One request's state. */
export interface FetchState {
  /** The peer address, once read from what the server handed over. */
  peer: string | undefined;
  /** What the server handed over about the peer last (reading it may cost: Bun's requestIP). */
  peerInfo: unknown;
  /** True once `peerInfo` was read into `peer`. */
  peerRead: boolean;
  last: RequestRateLimit | undefined;
  pending: Pending | undefined;
}

const states = requestSlot<FetchState>('sluice.fetch');

/** The request's state, or undefined when nothing was kept about it. */
export function stateOf(request: Request): FetchState | undefined {
  return states.get(request);
}

/** The request's state, created empty when there is none yet. */
export function ensureState(request: Request): FetchState {
  let state = states.get(request);
  if (state === undefined) {
    state = { peer: undefined, peerInfo: undefined, peerRead: false, last: undefined, pending: undefined };
    states.set(request, state);
  }
  return state;
}

/** Remembers `limit`'s admitted outcome until {@link takeAdmitted}. */
export function keepAdmitted(request: Request, limit: object, outcome: Admitted): void {
  const state = ensureState(request);
  state.last = outcome;
  state.pending = { limit, outcome, next: state.pending };
}

/** `limit`'s admitted outcome for this request, once: later calls find nothing. */
export function takeAdmitted(request: Request, limit: object): Admitted | undefined {
  const state = stateOf(request);
  if (state === undefined) return undefined;
  let previous: Pending | undefined;
  for (let entry = state.pending; entry !== undefined; previous = entry, entry = entry.next) {
    if (entry.limit !== limit) continue;
    if (previous === undefined) state.pending = entry.next;
    else previous.next = entry.next;
    return entry.outcome;
  }
  return undefined;
}
