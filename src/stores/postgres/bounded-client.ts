import type { PostgresClient, PostgresQueryable, PostgresRow } from './client.js';
import { overloadedError } from './errors.js';

/**
 * Counts the statements outstanding at the driver (waiting for a pool connection, or running)
 * and refuses to add more than `max`: with a hung server or a row lock held for minutes, a
 * timed-out statement stays in the pool's queue until the server answers, so without a bound
 * every request that times out leaves one more queued statement behind. Past the bound a call
 * rejects at once with `SLUICE_STORE_OVERLOADED`, sending nothing.
 */
export class BoundedClient implements PostgresClient {
  private count = 0;
  /**
   * When the server last answered a statement (rows, or an error carrying a SQLSTATE; not a lost
   * connection), on the monotonic clock: a take that times out after it answered a later one
   * waited behind others while the server kept answering (load, not a failure).
   */
  lastReplyAt = 0;
  /** Statements the server answered, late ones included (see `Store.replies`). */
  replies = 0;
  private readonly replied = (): void => {
    this.count--;
    this.lastReplyAt = performance.now();
    this.replies++;
  };
  private readonly failed = (error: unknown): void => {
    this.count--;
    if (hasSqlState(error)) {
      this.lastReplyAt = performance.now();
      this.replies++;
    }
  };

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
    // A driver that throws instead of rejecting still answers with a promise, and is counted out.
    let answer: Promise<T>;
    try {
      answer = call();
    } catch (error) {
      answer = Promise.reject(error);
    }
    answer.then(this.replied, this.failed);
    return answer;
  }
}

/**
 * True for a driver error the server sent: it carries a SQLSTATE (five digits or capitals; no
 * class starts with E, which keeps out Node's EPIPE).
 */
export function hasSqlState(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && sqlState.test(code);
}

const sqlState = /^[0-9A-DF-Z][0-9A-Z]{4}$/;

/**
 * A statement parameter whose text is the time left until `deadline` (ms, on the monotonic
 * clock) less a reply margin, read when the driver sends the statement, not when it was queued:
 * `pg` calls `toPostgres()` and postgres.js `toString()` at that moment. The statement adds it to
 * its own transaction's start, which gives the same deadline on the server's clock, whatever the
 * skew between the two machines' wall clocks.
 *
 * The margin (a quarter of the timeout, as the Redis store keeps) is the time a reply may take to
 * come back and be read: a statement that charges just before the server's deadline is answered
 * before the caller's, never after it (when the caller already has the failure policy's answer).
 */
export class TimeLeft {
  /** The last instant (monotonic ms) at which the statement may still be sent. */
  private readonly sendBy: number;

  constructor(deadline: number, timeoutMs: number) {
    this.sendBy = deadline - Math.floor(timeoutMs / 4);
  }

  /** True once the statement can no longer decide in time: it is dropped rather than sent. */
  expired(): boolean {
    return this.sendBy - performance.now() < 1;
  }

  toPostgres(): string {
    return this.toString();
  }

  toString(): string {
    return String(Math.max(0, Math.floor(this.sendBy - performance.now())));
  }
}

/**
 * The deadline of a warm-up statement: already a second past when the statement starts, so it is
 * parsed, planned and run up to its deadline check, which rolls it back (query_canceled); it is
 * sent all the same (never dropped), since preparing it on a connection is its whole purpose.
 */
export class SpentTimeLeft extends TimeLeft {
  constructor() {
    super(0, 0);
  }

  override expired(): boolean {
    return false;
  }

  override toString(): string {
    return '-1000';
  }
}

/** The deadline among a statement's values (its last one, when it has one). */
export function timeLeftOf(values: readonly unknown[]): TimeLeft | undefined {
  const last = values[values.length - 1];
  return last instanceof TimeLeft ? last : undefined;
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
