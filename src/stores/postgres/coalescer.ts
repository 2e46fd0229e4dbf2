import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { CallLimit } from '../../core/rules/rule.js';
import { sameCallLimit } from '../../core/call-limit.js';
import type { TimeSource } from '../shared/time-source.js';
import type { PostgresRow } from './client.js';
import { storeError, timeoutError } from './errors.js';

/** A take waiting for its statement's answer. */
export interface Waiter {
  resolve(decision: Decision): void;
  reject(error: unknown): void;
}

/**
 * Takes of one bucket with one cost and limit (a token bucket's tier by its numbers), answered
 * by one row: a take of the bucket under another tier leaves in a statement of its own, so each
 * row is decided under its own parameters.
 */
export interface TakeGroup {
  readonly bucket: string;
  readonly cost: number;
  readonly limit: CallLimit | undefined;
  readonly waiters: Waiter[];
}

/** When a batch's statement decides and until when it may: what its parameters need. */
export interface BatchTime {
  readonly now: number;
  /**
   * When its takes time out, on the monotonic clock (performance.now()); kept when a batch is
   * split. 0 until its clock starts (see `Coalescer.startClocks`).
   */
  readonly deadline: number;
}

/** One statement's worth of takes: a group per bucket. */
export interface TakeBatch extends BatchTime {
  readonly groups: ReadonlyMap<string, TakeGroup>;
}

interface Batch extends TakeBatch {
  readonly groups: Map<string, TakeGroup>;
  deadline: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Answered, failed or timed out: later outcomes are ignored. */
  done: boolean;
  /** Holds one of the rule's in-flight slots. */
  sent: boolean;
  /** Sent before its clock started: its statement leaves when the clock starts. */
  sendOnStart: boolean;
}

/** Reads a statement's rows into decisions: from a bucket's row, its takes' decisions in order. */
export interface RowDecisions {
  start(row: PostgresRow): void;
  next(cost: number, limit: CallLimit | undefined): Decision;
}

/** What a coalescer needs of its rule: how a batch leaves and how its answer reads. */
export interface BatchSender {
  /** Sends the one statement of `batch`: one row per bucket, named by `bucket`, in any order. */
  send(batch: TakeBatch): Promise<readonly PostgresRow[]>;
  /** The error a failed statement's takes reject with. */
  failure(error: unknown): unknown;
  /** A fresh reader of one statement's rows. */
  decisions(): RowDecisions;
}

/** How a coalescer bounds and shares statements (see `BucketsContext`). */
export interface CoalescerLimits {
  /** When the server last answered any statement (see `BoundedClient.lastReplyAt`). */
  readonly replies: { readonly lastReplyAt: number };
  readonly timeSource: TimeSource;
  readonly timeoutMs: number;
  /** Statements in flight before takes wait and coalesce; 0 = no coalescing. */
  readonly inFlight: number;
  /** Distinct buckets per coalesced statement. */
  readonly maxKeys: number;
}

/** For scheduling a microtask: cheaper than queueMicrotask, which wraps each in an AsyncResource. */
const resolved = Promise.resolve();

/**
 * Merges one rule's takes into few statements. While the rule already has its statements in
 * flight, further takes wait for the next statement and share it: takes of one bucket with one
 * cost become one group (`n` takes, one row), takes of other buckets more groups. That keeps a
 * hot key from queueing one transaction per take on its row lock, and turns many concurrent takes
 * into few commits, without changing any decision: the statement applies the `n` takes in order.
 * Every take is bounded by the timeout, waiting for a slot included.
 */
export class Coalescer {
  private pending: Batch | undefined;
  private running = 0;
  /** Rows (distinct buckets) of the statements running: what their answers will bring back. */
  private runningRows = 0;
  /** Batches made in this synchronous run, whose clocks start once it ends. */
  private unstarted: Batch[] = [];
  private readonly startClocks = (): void => {
    const batches = this.unstarted;
    this.unstarted = [];
    const deadline = performance.now() + this.limits.timeoutMs;
    for (const batch of batches) {
      if (batch.done) continue;
      batch.deadline = deadline;
      this.arm(batch);
      if (batch.sendOnStart) this.sendStatement(batch);
    }
  };

  constructor(
    private readonly limits: CoalescerLimits,
    private readonly sender: BatchSender,
  ) {}

  /** Queues a take of `bucket`, answered through `waiter`. */
  add(bucket: string, cost: number, limit: CallLimit | undefined, now: number, waiter: Waiter): void {
    const limits = this.limits;
    const batch = this.pending;
    if (limits.inFlight === 0 || (batch === undefined && this.running < limits.inFlight)) {
      this.send(this.newBatch(bucket, cost, limit, now, waiter));
      return;
    }
    if (batch === undefined) {
      this.pending = this.newBatch(bucket, cost, limit, now, waiter);
      return;
    }
    // With the application's time, one statement has one `now`.
    if (limits.timeSource === 'store' || batch.now === now) {
      const group = batch.groups.get(bucket);
      if (group !== undefined) {
        if (group.cost === cost && sameCallLimit(group.limit, limit)) {
          group.waiters.push(waiter);
          return;
        }
      } else if (batch.groups.size < limits.maxKeys) {
        batch.groups.set(bucket, { bucket, cost, limit, waiters: [waiter] });
        return;
      }
    }
    // Cannot share the waiting statement: go on its own (correct either way, only less batched).
    this.send(this.newBatch(bucket, cost, limit, now, waiter));
  }

  private newBatch(
    bucket: string,
    cost: number,
    limit: CallLimit | undefined,
    now: number,
    waiter: Waiter,
  ): Batch {
    const groups = new Map<string, TakeGroup>();
    groups.set(bucket, { bucket, cost, limit, waiters: [waiter] });
    // Its clock starts once the synchronous run that made it ends, as the Redis store's does: a
    // burst of 20,000 takes in one tick is the caller's time, not the store's, and would
    // otherwise time out every take it queued before the first statement could leave.
    const batch = batchOf(groups, now, 0);
    if (this.unstarted.length === 0) resolved.then(this.startClocks);
    this.unstarted.push(batch);
    return batch;
  }

  /**
   * Times `batch` out at its deadline. The bound covers waiting for a slot and the statement
   * itself. The timer only schedules the check for after the poll phase, which reads the replies
   * that have arrived: a statement the server answered in time is not timed out because the
   * process was busy (a burst) meanwhile.
   */
  private arm(batch: Batch): void {
    batch.timer = setTimeout(
      () => setImmediate(() => this.expire(batch)),
      Math.max(0, batch.deadline - performance.now()),
    );
    batch.timer.unref?.();
  }

  private send(batch: Batch): void {
    batch.sent = true;
    this.running++;
    this.runningRows += batch.groups.size;
    if (batch.deadline === 0) batch.sendOnStart = true;
    else this.sendStatement(batch);
  }

  /** Sends the statement of a batch holding an in-flight slot, and answers or fails its takes. */
  private sendStatement(batch: Batch): void {
    this.sender.send(batch).then(
      (rows) => this.answer(batch, rows),
      (error: unknown) => this.fail(batch, this.sender.failure(error)),
    );
  }

  private answer(batch: Batch, rows: readonly PostgresRow[]): void {
    if (!this.finish(batch)) return;
    const decisions = this.sender.decisions();
    const groups = batch.groups;
    let answered = 0;
    for (const row of rows) {
      const group = groups.get(row.bucket as string);
      if (group === undefined || group.waiters.length === 0) continue;
      answered++;
      decisions.start(row);
      for (const waiter of group.waiters) waiter.resolve(decisions.next(group.cost, group.limit));
      group.waiters.length = 0;
    }
    if (answered === groups.size) return;
    this.reject(batch, storeError(new Error('statement returned too few rows')));
  }

  private fail(batch: Batch, error: unknown): void {
    if (this.finish(batch)) this.reject(batch, error);
  }

  private expire(batch: Batch): void {
    if (batch.done) return;
    if (this.pending === batch) this.pending = undefined;
    const error = this.timeoutOf(batch);
    // A timed-out statement may still run; its slot is released so that the rule is not stuck
    // behind it. It cannot charge after its deadline (the statement checks it before answering
    // and rolls back), and the store's maxOutstanding bounds how many such statements wait.
    this.finish(batch);
    this.reject(batch, error);
  }

  /** Rejects the takes of `batch` not answered yet. */
  private reject(batch: Batch, error: unknown): void {
    for (const group of batch.groups.values()) for (const waiter of group.waiters) waiter.reject(error);
  }

  /**
   * The error of a batch whose time ran out: load (SLUICE_STORE_OVERLOADED) when the server
   * answered a statement after the batch's clock started (it answers; these takes waited behind
   * others in sluice's own queue), otherwise a timeout (it may be failing).
   */
  private timeoutOf(batch: Batch): SluiceError {
    const { timeoutMs, replies } = this.limits;
    if (replies.lastReplyAt <= batch.deadline - timeoutMs) return timeoutError(timeoutMs);
    return new SluiceError(
      'SLUICE_STORE_OVERLOADED',
      `PostgreSQL kept answering, but these takes waited in the store's queue longer than its timeout (${timeoutMs} ms): load, not a failure`,
    );
  }

  /** Marks `batch` done, frees its slot and sends the waiting batch. False if already done. */
  private finish(batch: Batch): boolean {
    if (batch.done) return false;
    batch.done = true;
    clearTimeout(batch.timer);
    if (batch.sent) {
      // The slot is freed one turn of the event loop later: callers answered just now usually
      // take again at once (in the microtasks this answer runs), and their takes then join the
      // waiting statement instead of leaving one by one. Fewer, larger statements and commits.
      setImmediate(() => {
        this.running--;
        this.runningRows -= batch.groups.size;
        this.sendPending();
      });
    }
    return true;
  }

  /**
   * Sends the waiting statement into the free slots, unless it is much smaller than those still
   * running: then it waits for them and leaves with their callers. Without this, callers split
   * into one large statement and one with a lone key, which keeps returning first and leaving
   * alone (16 callers on many keys: statements of 15 and 1 rows, in turn). Held back, the lone
   * key joins the others, and the whole is split evenly over the free slots, which stays even.
   */
  private sendPending(): void {
    const next = this.pending;
    if (next === undefined) return;
    if (this.running > 0 && next.groups.size * this.running < this.runningRows) return;
    this.pending = undefined;
    const free = this.limits.inFlight - this.running;
    const parts = Math.min(free, next.groups.size);
    if (parts <= 1) {
      this.send(next);
      return;
    }
    // Split the rows evenly over the free slots; each part bounds its own time as any batch.
    clearTimeout(next.timer);
    next.done = true;
    const per = Math.ceil(next.groups.size / parts);
    let part = new Map<string, TakeGroup>();
    for (const [bucket, group] of next.groups) {
      part.set(bucket, group);
      if (part.size === per) {
        this.send(this.armed(batchOf(part, next.now, next.deadline)));
        part = new Map();
      }
    }
    if (part.size > 0) this.send(this.armed(batchOf(part, next.now, next.deadline)));
  }

  private armed(batch: Batch): Batch {
    this.arm(batch);
    return batch;
  }
}

/** A batch not sent yet of `groups`, deciding at `now`, timing out at `deadline` (0: not started). */
function batchOf(groups: Map<string, TakeGroup>, now: number, deadline: number): Batch {
  return { groups, now, deadline, timer: undefined, done: false, sent: false, sendOnStart: false };
}
