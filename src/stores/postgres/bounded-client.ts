import type { PostgresClient, PostgresQueryable, PostgresRow } from './postgres-client.js';
import { overloadedError } from './postgres-errors.js';

/**
 * Counts the statements outstanding at the driver (waiting for a pool connection, or running)
 * and refuses to add more than `max`: with a hung server or a row lock held for minutes, a
 * timed-out statement stays in the pool's queue until the server answers, so without a bound
 * every request that times out leaves one more queued statement behind. Past the bound a call
 * rejects at once with `SLUICE_STORE_OVERLOADED`, sending nothing.
 */
export class BoundedClient implements PostgresClient {
  private count = 0;

  constructor(
    private readonly client: PostgresClient,
    /** The most statements outstanding at once (the `maxOutstanding` option). */
    readonly max: number,
  ) {}

  /** Statements sent and not yet settled by the driver. */
  get outstanding(): number {
    return this.count;
  }

  query(text: string, values: readonly unknown[], name: string): Promise<readonly PostgresRow[]> {
    return this.counted(() => this.client.query(text, values, name));
  }

  transaction<T>(fn: (tx: PostgresQueryable) => Promise<{ commit: boolean; value: T }>): Promise<T> {
    return this.counted(() => this.client.transaction(fn));
  }

  private counted<T>(call: () => Promise<T>): Promise<T> {
    if (this.count >= this.max) return Promise.reject(overloadedError(this.max));
    this.count++;
    let settled: Promise<T>;
    try {
      settled = call();
    } catch (error) {
      settled = Promise.reject(error);
    }
    const release = () => {
      this.count--;
    };
    settled.then(release, release);
    return settled;
  }
}

/**
 * A statement parameter whose text is the time left until `deadline` (ms, on the monotonic
 * clock), read when the driver sends the statement, not when it was queued: `pg` calls
 * `toPostgres()` and postgres.js `toString()` at that moment. The statement adds it to its
 * own `statement_timestamp()`, which gives the same deadline on the server's clock, whatever
 * the skew between the two machines' wall clocks.
 */
export class TimeLeft {
  constructor(private readonly deadline: number) {}

  toPostgres(): string {
    return this.toString();
  }

  toString(): string {
    return String(Math.max(0, Math.floor(this.deadline - performance.now())));
  }
}

/**
 * A statement parameter whose text is `offsetMs` less the time since `since` (ms, on the
 * monotonic clock), read when the driver sends the statement, as {@link TimeLeft} is: a time
 * the application measured back from its `now` becomes one measured back from the moment the
 * statement leaves, so the wait for a connection in between does not move it (rounded down:
 * earlier, never later).
 */
export class OffsetAtSend {
  constructor(
    private readonly offsetMs: number,
    private readonly since: number,
  ) {}

  toPostgres(): string {
    return this.toString();
  }

  toString(): string {
    return String(Math.floor(this.offsetMs - (performance.now() - this.since)));
  }
}
