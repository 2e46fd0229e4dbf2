/**
 * How far the Redis server's clock is ahead of this process's (`Date.now()`), learnt from the
 * server's time that every script reply carries.
 *
 * A sample is the server's time at the script's start minus ours when the reply is read, so it
 * is short of the true offset by the time between the two (half a round trip, the script, the
 * wait in Node's event loop), never over it. The best estimate is therefore the largest recent
 * sample, not the last: an estimate too small makes a call's deadline, translated to the server's
 * clock, earlier than it is (the safe side: the script refuses to charge a little early). Samples
 * are kept per 10 s and the last two periods count, so a clock that steps is followed within 20 s.
 */
const PERIOD_MS = 10_000;

export class ServerClockOffset {
  private current = -Infinity;
  private previous = -Infinity;
  private periodEnds = 0;

  /** Records the server's time `serverNow` (ms) read by a script whose reply arrives now. */
  sample(serverNow: number): void {
    const now = Date.now();
    if (!Number.isFinite(serverNow)) return;
    if (now >= this.periodEnds) {
      this.previous = now - this.periodEnds < PERIOD_MS ? this.current : -Infinity;
      this.current = -Infinity;
      this.periodEnds = now + PERIOD_MS;
    }
    const offset = serverNow - now;
    if (offset > this.current) this.current = offset;
  }

  /** The server's clock minus ours in ms; 0 before the first reply. */
  get ms(): number {
    const best = this.current > this.previous ? this.current : this.previous;
    return best === -Infinity ? 0 : best;
  }
}
