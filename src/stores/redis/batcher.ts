import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { RedisClient } from './client.js';
import {
  decisionScript,
  decisionScriptSha,
  reserveScript,
  reserveScriptSha,
  singleDecisionScript,
  singleDecisionScriptSha,
} from './scripts.js';
import { adjustScript, adjustScriptSha } from './adjust-scripts.js';
import { ServerClockOffset } from './server-clock-offset.js';
import {
  LEASE_REPLY_WIDTH,
  leaseAnswerAt,
  leaseScript,
  leaseScriptSha,
  pushLeaseArguments,
  type LeaseOperation,
} from './lease-script.js';
import type { LeaseGrant } from '../contract/lease-store.js';
import { redisErrorCode, storeError, timedOut, unavailable } from './errors.js';
import type { BucketTier, CallLimit } from '../../core/rules/rule.js';

/** What the batcher needs from one rule's buckets. */
export interface BatchRule {
  /**
   * The rule's parameters for the script, for a decision at about `now` (see scripts.ts): the
   * same array for as long as they do not change, so that a call sends each rule once.
   */
  spec(now: number): readonly string[];
  /** Whether its entries carry a per-call limit (see algorithms/algorithm.ts). */
  readonly callLimit: boolean;
  /** Integers of the script's reply per decision: 3, or 4 with the window's length. */
  readonly replyWidth: number;
  /** Whether {@link spec} depends on `now` (a calendar's periods). */
  readonly timed: boolean;
  /** The start of the window holding `at`, for a refund's take (see algorithms/algorithm.ts). */
  windowOf(at: number): number;
  /** Builds the decision from the script's numbers (`windowMs` 0 when the reply has none). */
  decision(
    allowed: boolean,
    remaining: number,
    retryAfterMs: number,
    resetMs: number,
    windowMs: number,
    cost: number,
    limit: CallLimit | undefined,
  ): Decision;
}

/** One entry of an all-or-nothing take, its Redis key already built. */
export interface BatchEntry {
  readonly rule: BatchRule;
  readonly key: string;
  readonly cost: number;
  /** As sent: a count for a rule counted per window, a token bucket's tier, or undefined. */
  readonly limit: CallLimit | undefined;
}

/** Settings of a {@link Batcher}, validated by `RedisStore`. */
export interface BatcherSettings {
  readonly client: RedisClient;
  readonly timeoutMs: number;
  readonly maxPending: number;
  readonly maxBatch: number;
  /** True: the script reads the server's TIME; false: it decides at the caller's `now`. */
  readonly serverClock: boolean;
  /** Extra TTL for every write (caller-clock mode), in ms. */
  readonly slackMs: number;
}

/**
 * What an adjustment settles: `delta` units (a refund below 0) of a take made at `takenAt`,
 * whose units a token bucket had refilled by `until`.
 */
interface Adjustment {
  readonly delta: number;
  /** The app's clock at the take (ms since the Unix epoch). */
  readonly takenAt: number;
  /** The take's time plus its decision's `resetMs`, on the app's clock. */
  readonly until: number;
  /** The key's reset marker (see `resetScript`), in the bucket's slot. */
  readonly marker: string;
  /** How long the rule's reset markers live (see `refundHorizonMs`). */
  readonly horizonMs: number;
}

/** What a reservation asks: a slot at most `maxWaitMs` ahead (see `RuleBuckets.reserve`). */
interface Reservation {
  readonly maxWaitMs: number;
}

/** A call that goes alone, in a script of its own: an adjustment or a reservation. */
type Alone = Adjustment | Reservation;

/** A script and its SHA1, for EVALSHA with the EVAL fallback. */
interface Script {
  readonly source: string;
  readonly sha: string;
}

const DECISION: Script = { source: decisionScript, sha: decisionScriptSha };
const SINGLE_DECISION: Script = { source: singleDecisionScript, sha: singleDecisionScriptSha };
const ADJUSTMENT: Script = { source: adjustScript, sha: adjustScriptSha };
const RESERVATION: Script = { source: reserveScript, sha: reserveScriptSha };
const LEASES: Script = { source: leaseScript, sha: leaseScriptSha };

/**
 * A request waiting for Redis: a single take (`group` null), an all-or-nothing take, an
 * adjustment or a reservation of one key (`alone` set, `group` null), or a lease operation
 * (`lease` set). One class for all keeps the hot path monomorphic.
 */
class Pending {
  resolve!: (value: never) => void;
  reject!: (error: unknown) => void;
  retried = false;
  constructor(
    readonly rule: BatchRule | null,
    readonly key: string,
    readonly cost: number,
    readonly limit: CallLimit | undefined,
    readonly group: readonly BatchEntry[] | null,
    readonly now: number,
    readonly slot: number,
    readonly alone: Alone | null,
    readonly lease: LeaseOperation | null = null,
  ) {}

  /**
   * When it was queued, as the batcher sees it: the batcher's first run after the synchronous
   * burst that queued it (20,000 takes in one tick are the caller's time, not the store's); 0
   * before. On the monotonic clock (performance.now()), as every time here: wall-clock jumps do
   * not matter.
   */
  queuedAt = 0;
  /** When it times out once sent: `timeout` after its first call was sent; 0 before. */
  deadline = 0;

  get size(): number {
    return this.group === null ? 1 : this.group.length;
  }
}

/** One script call in flight. */
class Batch {
  /** Answered: by its reply, a failure or its timeout. The driver may still hold it. */
  done = false;
  /** Decisions in it (the entries of its takes), held against `maxPending` until the driver lets go. */
  readonly size: number;
  constructor(
    readonly requests: Pending[],
    readonly keys: string[],
    readonly args: string[],
    /** The length of the reply expected. */
    readonly replyLength: number,
    /** The batch script, the lone take's, or the adjustment's. */
    readonly script: Script,
    /** When its decisions time out: the earliest deadline among them. */
    readonly deadline: number,
  ) {
    let size = 0;
    for (let i = 0; i < requests.length; i++) size += requests[i]!.size;
    this.size = size;
  }
}

/**
 * While this many script calls are in flight, new decisions wait and go together in the next
 * call: under load each call carries many decisions (one Redis round trip and one Lua entry for
 * all of them), while a lone decision is sent at once. Several calls in flight keep Redis busy
 * while Node turns the previous reply into decisions.
 *
 * A call counts as in flight until the client settles it, not until sluice answers its
 * decisions: a call that timed out is still queued in the client (or its socket) while Redis
 * hangs, so this also bounds what a hung Redis can pile up in the client (on a single Redis; a
 * Cluster sends a call per slot and is bounded by `maxPending`).
 */
const MAX_IN_FLIGHT = 8;
/** The status reply of a call that started after its deadline: `[now, -4]`, nothing changed. */
const EXPIRED = -4;
/** For scheduling a microtask: cheaper than queueMicrotask, which wraps each in an AsyncResource. */
const resolved = Promise.resolve();
/**
 * The fewest decisions a call carries when more wait. Smaller batches at moderate load keep Redis
 * and Node overlapped (Redis runs one call while Node answers the last) instead of taking turns
 * on one call, while a burst still goes in calls of `queued / free`. Measured on a noisy 2-core
 * machine: 8 × 16 beat 4 × 64 (16 in flight 51k -> 57k decisions/s on many keys, 73k -> 76k on a
 * hot key; 256 in flight hot 305k -> 352k); then 8 beat 16 at 16 in flight on 100,000 keys in 6
 * of 7 interleaved pairs (e.g. 147k against 106k, 89k against 30k), even on a hot key; 256 in
 * flight is unaffected (32 wait per free call).
 */
const SPLIT = 8;

/**
 * Groups the decisions that arrive together into one script call per tick (per hash slot on a
 * Cluster), bounded: beyond `maxPending` decisions waiting or held by the client, a take fails at
 * once (SLUICE_STORE_OVERLOADED, or SLUICE_STORE_TIMEOUT while calls that timed out are still
 * held); every decision settles within `timeoutMs` (SLUICE_STORE_TIMEOUT) whatever the client
 * does; while the connection is down nothing is queued at all. On the server's clock every call
 * carries its deadline, and a call that Redis starts after it changes nothing: a decision
 * answered with a timeout is never charged later.
 */
export class Batcher {
  private readonly settings: BatcherSettings;
  private queue: Pending[] = [];
  /** How many requests at the head of `queue` have `queuedAt` set. */
  private stamped = 0;
  /** When the client last settled a call (a reply or an error): Redis is making progress. */
  private lastSettledAt = 0;
  /**
   * When Redis last replied (a script's result or a reply error; not a connection error): a call
   * that times out after Redis replied to a later one waited in sluice's own queue or pipeline,
   * behind a burst, while Redis kept answering. That is load (SLUICE_STORE_OVERLOADED), not a
   * failure, and never admitted by `failure: 'open'`.
   */
  private lastReplyAt = 0;
  /** Replies read from Redis, late ones included (see `Store.replies`). */
  replies = 0;
  /** When the clock of the latest call that timed out started (see `full`). */
  private lastAbandonedStart = 0;
  /** Decisions (entries) queued or held by the client, against `maxPending`. */
  private pending = 0;
  /** Of those, decisions answered with a timeout whose call the client still holds. */
  private abandoned = 0;
  /** Script calls the client has not settled (answered or not). */
  private inFlight = 0;
  private scheduled = false;
  private closed = false;
  /** The server's clock minus ours, learnt from every reply: calendar periods and call deadlines. */
  private readonly offset = new ServerClockOffset();
  /**
   * How much earlier than its deadline in Node a call must start in Redis to be charged: the time
   * its reply may take to reach Node and be read. A quarter of the timeout.
   */
  private readonly replyMarginMs: number;
  private readonly run = (): void => this.flush();
  /**
   * Calls sent, watched by one timer rather than a timer each (see `start`); finished ones are
   * dropped when the timer fires or the list grows.
   */
  private flying: Batch[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Infinity;
  // The timer only schedules the check for the check phase of the event loop, after the poll
  // phase has read the replies that have arrived: a call Redis answered in time is not timed out
  // because Node was busy (a burst, a GC pause) when its deadline passed.
  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.timerAt = Infinity;
    setImmediate(this.expireDue);
  };
  private readonly expireDue = (): void => this.expireNow();

  constructor(settings: BatcherSettings) {
    this.settings = settings;
    this.replyMarginMs = Math.floor(settings.timeoutMs / 4);
  }

  /** A single take (cost 0: peek). `now` is ignored on the server's clock. */
  take(
    rule: BatchRule,
    key: string,
    cost: number,
    now: number,
    limit: CallLimit | undefined,
    slot: number,
  ): Promise<Decision> {
    return this.enqueue(rule, key, cost, limit, null, now, slot, 1, null) as Promise<Decision>;
  }

  /** An all-or-nothing take; every key must lie in `slot` on a Cluster. */
  takeAll(entries: readonly BatchEntry[], now: number, slot: number): Promise<Decision[]> {
    return this.enqueue(null, '', 0, undefined, entries, now, slot, entries.length, null) as Promise<
      Decision[]
    >;
  }

  /**
   * Settles `delta` units of a take of `key` made at `takenAt` and weighing until `until`, both
   * on the app's clock (see `RuleBuckets.adjust`), under the take's tier (undefined: none): one
   * call of its own, with the deadline and the failures of a take. `now` is ignored on the
   * server's clock.
   */
  adjust(
    rule: BatchRule,
    key: string,
    delta: number,
    now: number,
    takenAt: number,
    until: number,
    tier: BucketTier | undefined,
    slot: number,
    marker: string,
    horizonMs: number,
  ): Promise<void> {
    const adjustment: Adjustment = { delta, takenAt, until, marker, horizonMs };
    return this.enqueue(rule, key, 0, tier, null, now, slot, 1, adjustment) as Promise<never>;
  }

  /**
   * Reserves a slot for a take of `cost` at most `maxWaitMs` ahead (see `RuleBuckets.reserve`):
   * one call of its own, with the deadline and the failures of a take; Redis runs the calls one
   * at a time, so reservations queue in the order it runs them. The decision carries the wait.
   * `tier`: the call's (undefined: none).
   */
  reserve(
    rule: BatchRule,
    key: string,
    cost: number,
    now: number,
    maxWaitMs: number,
    tier: BucketTier | undefined,
    slot: number,
  ): Promise<Decision> {
    const reservation: Reservation = { maxWaitMs };
    return this.enqueue(rule, key, cost, tier, null, now, slot, 1, reservation) as Promise<Decision>;
  }

  /**
   * A lease operation on `key` (see leases.ts): batched with the lease operations queued next to
   * it, in a call of the lease script, with the deadline and failures of a take. Resolves to the
   * grant of an acquisition, or whether a release found the lease held.
   */
  lease(op: LeaseOperation, key: string, now: number, slot: number): Promise<LeaseGrant | boolean> {
    return this.enqueue(null, key, 0, undefined, null, now, slot, 1, null, op) as Promise<never>;
  }

  /** Refuses new decisions; those already queued or in flight still settle. */
  close(): void {
    this.closed = true;
  }

  private enqueue(
    rule: BatchRule | null,
    key: string,
    cost: number,
    limit: CallLimit | undefined,
    group: readonly BatchEntry[] | null,
    now: number,
    slot: number,
    size: number,
    alone: Alone | null,
    lease: LeaseOperation | null = null,
  ): Promise<Decision | Decision[]> {
    const { client, maxPending } = this.settings;
    if (this.closed) return Promise.reject(unavailable('store is closed'));
    // Fail fast while the connection is down: a client's offline queue would otherwise hold
    // every call until it reconnects, and memory would grow for as long as Redis is gone.
    if (!client.ready()) return Promise.reject(unavailable('connection is not ready'));
    if (this.pending + size > maxPending) return Promise.reject(this.full());
    const request = new Pending(rule, key, cost, limit, group, now, slot, alone, lease);
    const promise = new Promise<Decision | Decision[]>((resolve, reject) => {
      request.resolve = resolve as (value: never) => void;
      request.reject = reject;
    });
    this.pending += size;
    this.queue.push(request);
    this.schedule();
    return promise;
  }

  /**
   * Why no decision can be queued: calls that timed out still held by the client mean Redis is
   * not answering (a failure: SLUICE_STORE_TIMEOUT, the failure policy applies); otherwise the
   * queue is full of live decisions, which is load (SLUICE_STORE_OVERLOADED, never admitted by
   * `failure: 'open'`).
   */
  private full(): SluiceError {
    const { maxPending, timeoutMs } = this.settings;
    // Held calls that timed out mean Redis is not answering, unless it has replied since the
    // latest of them was sent: then they only waited behind a burst (load).
    if (this.abandoned > 0 && this.lastReplyAt <= this.lastAbandonedStart) {
      return new SluiceError(
        'SLUICE_STORE_TIMEOUT',
        `Redis did not answer within ${timeoutMs} ms; ${this.abandoned} decisions of calls that timed out are still held by the client (maxPending ${maxPending})`,
      );
    }
    return new SluiceError(
      'SLUICE_STORE_OVERLOADED',
      `Redis store has ${this.pending} decisions waiting or in flight (maxPending ${maxPending})`,
    );
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // Idle: send after the current synchronous burst (a microtask adds no latency). Busy: wait
    // for the end of this event-loop turn, so that everything the last reply set off goes
    // together.
    if (this.inFlight === 0) resolved.then(this.run);
    else setImmediate(this.run);
  }

  private flush(): void {
    this.scheduled = false;
    const cluster = this.settings.client.cluster;
    // Every decision's wait starts here, the first turn after the burst that queued it; and what
    // had expired is judged as of now, so that the time this loop takes never expires anything.
    const now = performance.now();
    for (let i = this.stamped; i < this.queue.length; i++) this.queue[i]!.queuedAt = now;
    this.stamped = this.queue.length;
    while (this.queue.length > 0 && (cluster || this.inFlight < MAX_IN_FLIGHT)) {
      const queue = this.queue;
      // Spread what waits over the free calls, at least SPLIT per call: moderate load gets
      // several calls in flight (Redis and Node overlap), a burst drains in one round.
      let queued = 0;
      for (let i = 0; i < queue.length; i++) queued += queue[i]!.size;
      const free = cluster ? 1 : MAX_IN_FLIGHT - this.inFlight;
      const limit = Math.min(this.settings.maxBatch, Math.max(SPLIT, Math.ceil(queued / free)));
      let taken = 0;
      let size = 0;
      // An adjustment or a reservation goes alone, in a call of its own script; lease
      // operations go together in calls of theirs, takes in calls of theirs: what is queued
      // after goes in the next call, so every call runs in the order it was asked for.
      if (queue[0]!.alone !== null) taken = 1;
      else {
        const leases = queue[0]!.lease !== null;
        while (
          taken < queue.length &&
          queue[taken]!.alone === null &&
          (queue[taken]!.lease !== null) === leases &&
          (size === 0 || size + queue[taken]!.size <= limit)
        ) {
          size += queue[taken]!.size;
          taken++;
        }
      }
      let batch: Pending[];
      if (taken === queue.length) {
        batch = queue;
        this.queue = [];
      } else {
        batch = queue.splice(0, taken);
      }
      this.stamped -= taken;
      // A decision that waited out its timeout behind calls that did not answer is not sent.
      let live = 0;
      for (let i = 0; i < batch.length; i++) {
        const request = batch[i]!;
        if (this.expiresAt(request) <= now) this.drop(request);
        else batch[live++] = request;
      }
      batch.length = live;
      if (live === 0) continue;
      const alone = batch[0]!.alone;
      if (alone !== null) {
        if ('maxWaitMs' in alone) this.sendReservation(batch[0]!, alone.maxWaitMs);
        else this.sendAdjustment(batch[0]!, alone);
      } else if (cluster) this.sendBySlot(batch);
      else this.send(batch);
    }
    // Decisions left waiting behind calls in flight time out too, even if none of those settles.
    if (this.stamped > 0) {
      const at = this.expiresAt(this.queue[0]!);
      if (at < this.timerAt) this.arm(at);
    }
  }

  /**
   * When a decision still waiting to be sent times out: `timeout` after it was queued, but not
   * while Redis keeps answering (the queue drains at Redis' pace, bounded by `maxPending`); a
   * retried one keeps the deadline of its first call. So load alone (a burst larger than one
   * round of calls) does not time decisions out, and a Redis that stops answering does.
   */
  private expiresAt(request: Pending): number {
    if (request.deadline !== 0) return request.deadline;
    const since = request.queuedAt > this.lastSettledAt ? request.queuedAt : this.lastSettledAt;
    return since + this.settings.timeoutMs;
  }

  /** Times out a decision that was never sent. */
  private drop(request: Pending): void {
    this.pending -= request.size;
    const since = request.deadline !== 0 ? request.deadline - this.settings.timeoutMs : request.queuedAt;
    this.settle(request, this.timeoutSince(since));
  }

  /**
   * The error of a decision whose time, started at `since`, ran out: load when Redis replied to
   * something since (it answers, this decision only waited behind others), else a timeout.
   */
  private timeoutSince(since: number): SluiceError {
    const { timeoutMs } = this.settings;
    if (this.lastReplyAt <= since) return timedOut(timeoutMs);
    return new SluiceError(
      'SLUICE_STORE_OVERLOADED',
      `Redis kept answering, but this decision waited in the store's queue or pipeline longer than its timeout (${timeoutMs} ms): load, not a failure`,
    );
  }

  /**
   * A call's deadline on the server's clock, for the script to check at its start (empty on the
   * caller's clock): the reply margin earlier than the deadline in Node, so that a reply of a
   * call that charged arrives before Node gives up on it.
   */
  private serverDeadline(deadline: number): string {
    if (!this.settings.serverClock) return '';
    const left = deadline - performance.now() - this.replyMarginMs;
    return String(Math.floor(Date.now() + this.offset.ms + left));
  }

  private sendBySlot(batch: Pending[]): void {
    // One script call can only touch keys of one hash slot.
    const bySlot = new Map<number, Pending[]>();
    for (const request of batch) {
      const list = bySlot.get(request.slot);
      if (list === undefined) bySlot.set(request.slot, [request]);
      else list.push(request);
    }
    for (const list of bySlot.values()) this.send(list);
  }

  /**
   * Starts the clock of the decisions of a call about to be sent (a retried one keeps its own),
   * and returns the call's deadline: the earliest among them.
   */
  private startClocks(requests: Pending[]): number {
    const deadline = performance.now() + this.settings.timeoutMs;
    let earliest = deadline;
    for (let i = 0; i < requests.length; i++) {
      const request = requests[i]!;
      if (request.deadline === 0) request.deadline = deadline;
      else if (request.deadline < earliest) earliest = request.deadline;
    }
    return earliest;
  }

  private send(requests: Pending[]): void {
    const { serverClock, slackMs } = this.settings;
    if (requests[0]!.lease !== null) {
      this.sendLeases(requests);
      return;
    }
    if (requests.length === 1 && requests[0]!.group === null) {
      this.sendSingle(requests);
      return;
    }
    const keys: string[] = [];
    // The rules' parameters first, each once (see scripts.ts), then the entries.
    const args: string[] = [serverClock ? '' : String(slackMs), '', ''];
    const refs = new Map<readonly string[], string>();
    const entries: string[] = [];
    let replyLength = 1;
    const estimate = Date.now() + this.offset.ms;
    const deadline = this.startClocks(requests);
    // Consecutive single takes alike (rule, cost, limit, and `now` on the caller's clock) go as
    // one run: their keys, and their entry once.
    let run: Pending | undefined;
    let runLength = 0;
    const closeRun = () => {
      if (run === undefined) return;
      const rule = run.rule as BatchRule;
      if (runLength > 1) entries.push('0', String(runLength));
      entries.push(specRef(rule, serverClock ? estimate : run.now, args, refs));
      if (!serverClock) entries.push(String(run.now));
      const tiered = typeof run.limit === 'object';
      entries.push(String(tiered ? -1 - run.cost : run.cost));
      if (rule.callLimit) entries.push(limitArg(run.limit));
      if (tiered) pushTier(entries, run.limit);
      run = undefined;
    };
    for (const request of requests) {
      const group = request.group;
      if (group === null) {
        const rule = request.rule as BatchRule;
        keys.push(request.key);
        replyLength += rule.replyWidth;
        if (
          run !== undefined &&
          run.rule === rule &&
          run.cost === request.cost &&
          run.limit === request.limit &&
          (serverClock || run.now === request.now)
        ) {
          runLength++;
          continue;
        }
        closeRun();
        run = request;
        runLength = 1;
      } else {
        closeRun();
        const now = serverClock ? estimate : request.now;
        entries.push(String(-group.length));
        if (!serverClock) entries.push(String(request.now));
        for (const entry of group) {
          const rule = entry.rule;
          keys.push(entry.key);
          const tiered = typeof entry.limit === 'object';
          entries.push(specRef(rule, now, args, refs), String(tiered ? -1 - entry.cost : entry.cost));
          if (rule.callLimit) entries.push(limitArg(entry.limit));
          if (tiered) pushTier(entries, entry.limit);
          replyLength += rule.replyWidth;
        }
      }
    }
    closeRun();
    args[1] = this.serverDeadline(deadline);
    args[2] = String(args.length - 3);
    for (let i = 0; i < entries.length; i++) args.push(entries[i]!);
    this.start(new Batch(requests, keys, args, replyLength, DECISION, deadline));
  }

  /** A lone single take: {@link singleDecisionScript}, the same decision for less work. */
  private sendSingle(requests: Pending[]): void {
    const { serverClock, slackMs } = this.settings;
    const request = requests[0]!;
    const rule = request.rule as BatchRule;
    this.startClocks(requests);
    // Only a calendar's parameters depend on the time (its periods).
    const spec = rule.spec(!rule.timed ? 0 : serverClock ? Date.now() + this.offset.ms : request.now);
    const args = [String(request.cost)];
    for (let i = 0; i < spec.length; i++) args.push(spec[i]!);
    if (rule.callLimit) args.push(limitArg(request.limit));
    pushTier(args, request.limit);
    if (serverClock) args.push(this.serverDeadline(request.deadline));
    else args.push(String(slackMs), String(request.now));
    const replyLength = 1 + rule.replyWidth;
    this.start(new Batch(requests, [request.key], args, replyLength, SINGLE_DECISION, request.deadline));
  }

  /**
   * An adjustment: {@link adjustScript}, one key. On the server's clock the take's time and
   * `until` are translated to the server's with the measured offset, which is short of the true
   * one (see server-clock-offset.ts): the window found for the take is never later than the one
   * it was charged in, and `until` never later than the server's end of the take's units, so a
   * refund gives back at most what it should (a token bucket keeps up to the offset's error of
   * the take). For the same reason the take's time sent is never later than the server's time
   * when the take ran, so a refund of a take made before a reset is always found to be so (one
   * made shortly after it may be too: it then gives nothing back, the safe side).
   */
  private sendAdjustment(request: Pending, adjustment: Adjustment): void {
    const { serverClock, slackMs } = this.settings;
    const rule = request.rule as BatchRule;
    const { delta, takenAt, until, marker, horizonMs } = adjustment;
    this.startClocks([request]);
    const offset = serverClock ? this.offset.ms : 0;
    const spec = rule.spec(!rule.timed ? 0 : serverClock ? Date.now() + offset : request.now);
    const args = [
      String(delta),
      String(rule.windowOf(takenAt + offset)),
      String(until + offset),
      String(takenAt + offset),
      String(horizonMs),
    ];
    for (let i = 0; i < spec.length; i++) args.push(spec[i]!);
    pushTier(args, request.limit);
    if (serverClock) args.push(this.serverDeadline(request.deadline));
    else args.push(String(slackMs), String(request.now));
    this.start(new Batch([request], [request.key, marker], args, 2, ADJUSTMENT, request.deadline));
  }

  /** A reservation: {@link reserveScript}, one key, its reply a lone take's and the wait. */
  /** Lease operations: one call of {@link leaseScript}, a key each. */
  private sendLeases(requests: Pending[]): void {
    const { serverClock, slackMs } = this.settings;
    const deadline = this.startClocks(requests);
    const keys: string[] = [];
    // The groups' values first, each once, then the operations (see leases.ts).
    const groups: string[] = [];
    const refs = new Map<readonly [string, string], number>();
    const ops: string[] = [];
    for (const request of requests) {
      keys.push(request.key);
      const op = request.lease as LeaseOperation;
      pushLeaseArguments(ops, groups, refs, op, serverClock ? undefined : request.now);
    }
    const args: string[] = [
      serverClock ? '' : String(slackMs),
      this.serverDeadline(deadline),
      String(groups.length),
    ];
    for (let i = 0; i < groups.length; i++) args.push(groups[i]!);
    for (let i = 0; i < ops.length; i++) args.push(ops[i]!);
    const replyLength = 1 + LEASE_REPLY_WIDTH * requests.length;
    this.start(new Batch(requests, keys, args, replyLength, LEASES, deadline));
  }

  private sendReservation(request: Pending, maxWaitMs: number): void {
    const { serverClock, slackMs } = this.settings;
    const rule = request.rule as BatchRule;
    this.startClocks([request]);
    const spec = rule.spec(!rule.timed ? 0 : serverClock ? Date.now() + this.offset.ms : request.now);
    const args = [String(request.cost), String(maxWaitMs)];
    for (let i = 0; i < spec.length; i++) args.push(spec[i]!);
    pushTier(args, request.limit);
    if (serverClock) args.push(this.serverDeadline(request.deadline));
    else args.push(String(slackMs), String(request.now));
    this.start(new Batch([request], [request.key], args, 5, RESERVATION, request.deadline));
  }

  private start(batch: Batch): void {
    this.inFlight++;
    // Compacted once finished calls are most of the list: amortised O(1) per call.
    if (this.flying.length >= 2 * this.inFlight + 64) this.flying = this.flying.filter((b) => !b.done);
    this.flying.push(batch);
    // One timer for every call in flight, armed for the earliest deadline. Deadlines mostly grow
    // with each call, so the armed timer usually already fires first and nothing is scheduled
    // here: a lone decision does not pay for creating and clearing a timer of its own.
    if (batch.deadline < this.timerAt) this.arm(batch.deadline);
    this.call(batch, false);
  }

  private arm(at: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(this.onTimer, Math.max(0, at - performance.now()));
    this.timer.unref?.();
  }

  /**
   * Times out the calls past their deadline and the decisions that waited past theirs without
   * being sent, then re-arms for the earliest deadline left, if any.
   */
  private expireNow(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    const flying = this.flying;
    this.flying = [];
    for (const batch of flying) {
      if (batch.done) continue;
      if (batch.deadline <= now) this.expire(batch);
      else {
        this.flying.push(batch);
        if (batch.deadline < next) next = batch.deadline;
      }
    }
    // The queue is in order of expiry (queued in turn; a retried decision goes back to its head).
    const queue = this.queue;
    let due = 0;
    while (due < this.stamped && this.expiresAt(queue[due]!) <= now) due++;
    if (due > 0) {
      const expired = queue.splice(0, due);
      this.stamped -= due;
      for (const request of expired) this.drop(request);
    }
    if (this.stamped > 0) {
      const at = this.expiresAt(queue[0]!);
      if (at < next) next = at;
    }
    if (next !== Infinity) this.arm(next);
  }

  private call(batch: Batch, fallback: boolean): void {
    const { client } = this.settings;
    let reply: Promise<unknown>;
    try {
      const script = batch.script;
      reply = fallback
        ? client.eval(script.source, batch.keys, batch.args)
        : client.evalsha(script.sha, batch.keys, batch.args);
    } catch (error) {
      this.release(batch);
      this.fail(batch, error);
      return;
    }
    reply.then(
      (value) => {
        this.lastReplyAt = performance.now();
        this.replies++;
        this.release(batch);
        this.receive(batch, value);
      },
      (error: unknown) => {
        if (redisErrorCode(error) !== undefined) {
          this.lastReplyAt = performance.now();
          this.replies++;
        }
        // The server lost its scripts (restart, failover, SCRIPT FLUSH): send the source, which
        // also loads it again for the next EVALSHA. The call stays in flight meanwhile.
        if (!fallback && !batch.done && redisErrorCode(error) === 'NOSCRIPT') {
          this.call(batch, true);
          return;
        }
        this.release(batch);
        this.fail(batch, error);
      },
    );
  }

  /** The client settled the call: its place in flight and its decisions' places are free. */
  private release(batch: Batch): void {
    this.lastSettledAt = performance.now();
    this.inFlight--;
    this.pending -= batch.size;
    if (batch.done) this.abandoned -= batch.size;
    if (this.queue.length > 0) this.schedule();
  }

  /** Marks the call answered; false when it was already. */
  private finish(batch: Batch): boolean {
    if (batch.done) return false;
    batch.done = true;
    return true;
  }

  private expire(batch: Batch): void {
    if (!this.finish(batch)) return;
    this.abandoned += batch.size;
    // The batch's clock started at the earliest deadline less the timeout (or earlier).
    const start = batch.deadline - this.settings.timeoutMs;
    if (start > this.lastAbandonedStart) this.lastAbandonedStart = start;
    const error = this.timeoutSince(start);
    for (const request of batch.requests) this.settle(request, error);
  }

  private fail(batch: Batch, cause: unknown): void {
    if (!this.finish(batch)) return;
    const error = storeError(cause);
    for (const request of batch.requests) this.settle(request, error);
  }

  private receive(batch: Batch, reply: unknown): void {
    if (this.settings.serverClock && Array.isArray(reply)) this.offset.sample(Number(reply[0]));
    if (!this.finish(batch)) return;
    const requests = batch.requests;
    if (Array.isArray(reply) && reply.length === 2 && Number(reply[1]) === EXPIRED) {
      // Redis started the call after its deadline and changed nothing. Either Node gave up on
      // it already (the timer was late), or the offset to the server's clock was not known yet
      // (the first call): the offset is now learnt, so a decision with time left goes again.
      const now = performance.now();
      for (const request of requests) {
        if (!request.retried && request.deadline > now) this.retry(request);
        else this.settle(request, this.timeoutSince(request.deadline - this.settings.timeoutMs));
      }
      return;
    }
    if (!Array.isArray(reply) || reply.length !== batch.replyLength) {
      const error = unavailable('answered a script call with an unexpected reply');
      for (const request of requests) this.settle(request, error);
      return;
    }
    if (batch.script === ADJUSTMENT) {
      // [now, status]: done, or -3, a calendar's periods that did not hold the server's time.
      const request = requests[0]!;
      if (Number(reply[1]) === -3) this.refuse(request, -3);
      else this.settle(request, undefined, undefined);
      return;
    }
    if (batch.script === LEASES) {
      for (let i = 0; i < requests.length; i++) {
        const request = requests[i]!;
        const answer = leaseAnswerAt(reply, 1 + i * LEASE_REPLY_WIDTH, request.lease as LeaseOperation);
        this.settle(request, undefined, answer as never);
      }
      return;
    }
    if (batch.script === RESERVATION) {
      // [now, retry, remaining, reset, waited]: an admitted decision carries its wait.
      const request = requests[0]!;
      const rule = request.rule as BatchRule;
      const retry = Number(reply[1]);
      const decision = rule.decision(
        retry === 0,
        Number(reply[2]),
        retry === 0 ? Number(reply[4]) : retry < 0 ? Infinity : retry,
        Number(reply[3]),
        0,
        request.cost,
        request.limit,
      );
      this.settle(request, undefined, decision);
      return;
    }
    let o = 1;
    for (const request of requests) {
      const group = request.group;
      // -3 in the first entry: a group the script did not evaluate.
      const failed = Number(reply[o]) === -3;
      if (group === null) {
        const rule = request.rule as BatchRule;
        if (failed) this.refuse(request, -3);
        else this.settle(request, undefined, decisionAt(reply, o, rule, request.cost, request.limit));
        o += rule.replyWidth;
      } else {
        const decisions: Decision[] = [];
        for (const entry of group) {
          if (!failed) decisions.push(decisionAt(reply, o, entry.rule, entry.cost, entry.limit));
          o += entry.rule.replyWidth;
        }
        if (failed) this.refuse(request, -3);
        else this.settle(request, undefined, decisions);
      }
    }
  }

  /** A group the script did not evaluate (it changed nothing). */
  private refuse(request: Pending, status: number): void {
    if (status === -3 && !request.retried) {
      // Server and Node disagree on the calendar period by more than a period: the offset has
      // just been learnt from this reply, so one retry sends the right periods.
      this.retry(request);
      return;
    }
    const reason =
      status === -3 ? 'clock disagrees with the calendar periods sent to it' : `answered status ${status}`;
    this.settle(request, unavailable(reason));
  }

  /** Queues a decision of a settled call once more, at the head: it keeps its deadline. */
  private retry(request: Pending): void {
    request.retried = true;
    this.pending += request.size;
    this.queue.unshift(request);
    this.stamped++;
    this.schedule();
  }

  private settle(request: Pending, error: unknown, value?: Decision | Decision[]): void {
    if (error === undefined) request.resolve(value as never);
    else request.reject(error);
  }
}

function decisionAt(
  reply: unknown[],
  o: number,
  rule: BatchRule,
  cost: number,
  limit: CallLimit | undefined,
): Decision {
  const retry = Number(reply[o]);
  return rule.decision(
    retry === 0,
    Number(reply[o + 1]),
    retry < 0 ? Infinity : retry,
    Number(reply[o + 2]),
    rule.replyWidth === 4 ? Number(reply[o + 3]) : 0,
    cost,
    limit,
  );
}

/** The index in ARGV of `rule`'s parameters, adding them to `args` the first time. */
function specRef(rule: BatchRule, now: number, args: string[], refs: Map<readonly string[], string>): string {
  const spec = rule.spec(now);
  let ref = refs.get(spec);
  if (ref === undefined) {
    ref = String(args.length + 1);
    refs.set(spec, ref);
    for (let i = 0; i < spec.length; i++) args.push(spec[i]!);
  }
  return ref;
}

function limitArg(limit: CallLimit | undefined): string {
  return limit === undefined ? '' : String(limit);
}

/**
 * Appends a per-call tier's rate, period and burst (see scripts.ts), when `limit` is one: the
 * rule's buckets send a tier only for a token bucket, and only one that differs from the rule.
 */
function pushTier(args: string[], limit: CallLimit | undefined): void {
  if (typeof limit === 'object') args.push(String(limit.limit), String(limit.periodMs), String(limit.burst));
}
