/**
 * Slows guesses at the server's own tokens: each peer address may fail authentication
 * {@link FAILED_AUTH_LIMIT} times, and gets one more try back every period / limit; past that,
 * every request it sends with or without a token is answered 429 with Retry-After before any
 * token is compared, so a guess can be neither tried nor confirmed. Addresses are held in this
 * process only, never logged, and at most {@link FAILED_AUTH_PEERS} of them: a peer whose tries
 * are all back is dropped first, else the one that failed longest ago (a flood from many
 * addresses gains nothing it would not have with those addresses anyway).
 */

/** Failed authentications a peer may make at once. */
export const FAILED_AUTH_LIMIT = 10;
/** In how long a peer's failed tries all come back (ms). */
export const FAILED_AUTH_PERIOD_MS = 60_000;
/** The most peer addresses remembered at once. */
export const FAILED_AUTH_PEERS = 10_000;

/** Options of {@link AuthThrottle}. */
export interface AuthThrottleOptions {
  /** @default FAILED_AUTH_LIMIT */
  limit?: number;
  /** @default FAILED_AUTH_PERIOD_MS */
  periodMs?: number;
  /** @default FAILED_AUTH_PEERS */
  maxPeers?: number;
  /** A monotonic clock (ms). @default performance.now */
  now?: () => number;
}

export class AuthThrottle {
  /** By peer: when all its tries are back (ms on the clock). */
  private readonly peers = new Map<string, number>();
  private readonly intervalMs: number;
  private readonly limit: number;
  private readonly periodMs: number;
  private readonly maxPeers: number;
  private readonly now: () => number;

  constructor(options: AuthThrottleOptions = {}) {
    this.limit = options.limit ?? FAILED_AUTH_LIMIT;
    this.periodMs = options.periodMs ?? FAILED_AUTH_PERIOD_MS;
    this.maxPeers = options.maxPeers ?? FAILED_AUTH_PEERS;
    this.now = options.now ?? (() => performance.now());
    this.intervalMs = this.periodMs / this.limit;
  }

  /** Peers remembered now (for tests of the bound). */
  get size(): number {
    return this.peers.size;
  }

  /** 0 when `peer` may try a token now, else how long until it may (ms). */
  waitMs(peer: string): number {
    const due = this.peers.get(peer);
    if (due === undefined) return 0;
    // A cell rate: each failure moves the time its tries are all back by period / limit, and a
    // try is open while that time is at most one period less one interval ahead.
    return Math.max(0, Math.ceil(due - this.now() - (this.periodMs - this.intervalMs)));
  }

  /** Counts a failed authentication of `peer`. */
  failed(peer: string): void {
    const now = this.now();
    const due = this.peers.get(peer);
    if (due === undefined && this.peers.size >= this.maxPeers) this.evict(now);
    // Most recently failed last: the eviction order.
    this.peers.delete(peer);
    this.peers.set(peer, Math.max(due ?? now, now) + this.intervalMs);
  }

  /**
   * Drops the peers, oldest failure first, whose tries are all back; stops at the first that is
   * still owed some (so a flood costs one step per new peer, not a sweep of the map); if none
   * was dropped, the one that failed longest ago goes.
   */
  private evict(now: number): void {
    for (const [peer, due] of this.peers) {
      if (due > now) break;
      this.peers.delete(peer);
    }
    if (this.peers.size >= this.maxPeers) this.peers.delete(this.peers.keys().next().value!);
  }
}
