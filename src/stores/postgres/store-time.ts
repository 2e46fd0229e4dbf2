import type { TimeSource } from '../shared/time-source.js';

/**
 * The time a statement is expected to decide at, for the parameters that depend on it
 * (calendar periods): the application's `now` with timeSource "app"; with "store", this
 * process's clock corrected by the last offset to PostgreSQL's clock that a statement revealed
 * (0 until one did: clocks kept by NTP differ by milliseconds, and periods last an hour or more).
 */
export class StoreTime {
  private offset = 0;

  constructor(readonly source: TimeSource) {}

  /** The expected deciding time of a statement sent now for a take at `now`. */
  at(now: number): number {
    return this.source === 'app' ? now : Date.now() + this.offset;
  }

  /** Learns the store's time from a statement that reported it. */
  learn(storeNow: number): void {
    if (this.source === 'store') this.offset = storeNow - Date.now();
  }
}
