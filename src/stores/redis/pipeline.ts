import type { SluiceError } from '../../core/errors.js';
import type { RedisClient } from './client.js';
import { ServerClockOffset } from './server-clock-offset.js';
import {
  heldByClient,
  overloaded,
  redisErrorCode,
  storeError,
  timedOut,
  unavailable,
  waitedBehindLoad,
} from './errors.js';
import { DeadlineTimer } from './deadline-timer.js';
import { Pending, type CallContext, type Command, type ScriptCall } from './calls/script-call.js';

/** Settings of a {@link Pipeline}, validated by `RedisStore`. */
export interface PipelineSettings {
  readonly client: RedisClient;
  readonly timeoutMs: number;
  readonly maxPending: number;
  readonly maxBatch: number;
  /** True: the scripts read the server's TIME; false: they decide at the caller's `now`. */
  readonly serverClock: boolean;
  /** Extra TTL for every write (caller-clock mode), in ms. */
  readonly slackMs: number;
}

/**
 * While this many script calls are in flight, new decisions wait and go together in the next
 * call: under load each call carries many decisions (one Redis round trip and one Lua entry for
 * all of them), while a lone decision is sent at once. Several calls in flight keep Redis busy
 * while Node turns the previous reply into decisions.
 *
 * A call counts as in flight until the client gives it back, not until sluice answers its
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
 * The transport of the Redis store: groups the requests that arrive together into one script
 * call per tick (per hash slot on a Cluster), bounded: beyond `maxPending` decisions waiting or
 * held by the client, a request fails at once (SLUICE_STORE_OVERLOADED, or SLUICE_STORE_TIMEOUT
 * while calls that timed out are still held); every request settles within `timeoutMs`
 * (SLUICE_STORE_TIMEOUT) whatever the client does; while the connection is down nothing is
 * queued at all. On the server's clock every call carries its deadline, and a call that Redis
 * starts after it changes nothing: a decision answered with a timeout is never charged later.
 *
 * What a call carries and what its reply means belong to the call modules (calls/): the pipeline
 * sends the commands they build and hands them the replies.
 */
export class Pipeline implements CallContext {
  readonly serverClock: boolean;
  readonly slackMs: number;
  /** Replies read from Redis, late ones included (see `Store.replies`). */
  replies = 0;
  private readonly settings: PipelineSettings;
  private queue: Pending[] = [];
  /** How many requests at the head of `queue` have `queuedAt` set. */
  private stamped = 0;
  /** When the client last gave a call back (a reply or an error): Redis is making progress. */
  private lastReleasedAt = 0;
  /**
   * When Redis last replied (a script's result or a reply error; not a connection error): a call
   * that times out after Redis replied to a later one waited in sluice's own queue or pipeline,
   * behind a burst, while Redis kept answering. That is load (SLUICE_STORE_OVERLOADED), not a
   * failure, and never admitted by `failure: 'open'`.
   */
  private lastReplyAt = 0;
  /** When the clock of the latest call that timed out started (see `full`). */
  private lastAbandonedStart = 0;
  /** Decisions (entries) queued or held by the client, against `maxPending`. */
  private pending = 0;
  /** Of those, decisions answered with a timeout whose call the client still holds. */
  private abandoned = 0;
  /** Script calls the client has not given back (answered or not). */
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
  private readonly timer = new DeadlineTimer(() => this.expireNow());
  private readonly expireCommand = (command: Command): void => this.expire(command);

  constructor(settings: PipelineSettings) {
    this.settings = settings;
    this.serverClock = settings.serverClock;
    this.slackMs = settings.slackMs;
    this.replyMarginMs = Math.floor(settings.timeoutMs / 4);
  }

  get offsetMs(): number {
    return this.offset.ms;
  }

  /**
   * Queues a request of `call` (see {@link Pending} for the fields) and resolves to the answer
   * its call module gives it. Fails at once while closed, disconnected or full.
   */
  enqueue<T>(
    call: ScriptCall,
    key: string,
    size: number,
    now: number,
    slot: number,
    subject: unknown,
    cost: number,
    limit: unknown,
    detail: unknown,
  ): Promise<T> {
    const { client, maxPending } = this.settings;
    if (this.closed) return Promise.reject(unavailable('store is closed'));
    // Fail fast while the connection is down: a client's offline queue would otherwise hold
    // every call until it reconnects, and memory would grow for as long as Redis is gone.
    if (!client.ready()) return Promise.reject(unavailable('connection is not ready'));
    if (this.pending + size > maxPending) return Promise.reject(this.full());
    const request = new Pending(call, key, size, now, slot, subject, cost, limit, detail);
    const promise = new Promise<T>((resolve, reject) => {
      request.resolve = resolve as (value: never) => void;
      request.reject = reject;
    });
    this.pending += size;
    this.queue.push(request);
    this.schedule();
    return promise;
  }

  /** Refuses new requests; those already queued or in flight still settle. */
  close(): void {
    this.closed = true;
  }

  startClocks(requests: readonly Pending[]): number {
    const deadline = performance.now() + this.settings.timeoutMs;
    let earliest = deadline;
    for (let i = 0; i < requests.length; i++) {
      const request = requests[i]!;
      if (request.deadline === 0) request.deadline = deadline;
      else if (request.deadline < earliest) earliest = request.deadline;
    }
    return earliest;
  }

  /**
   * The reply margin earlier than the deadline in Node, so that a reply of a call that charged
   * arrives before Node gives up on it.
   */
  serverDeadline(deadline: number): string {
    if (!this.serverClock) return '';
    const left = deadline - performance.now() - this.replyMarginMs;
    return String(Math.floor(Date.now() + this.offset.ms + left));
  }

  retryOnce(request: Pending): boolean {
    if (request.retried) return false;
    this.retry(request);
    return true;
  }

  /**
   * Why no request can be queued: calls that timed out still held by the client mean Redis is
   * not answering (a failure: SLUICE_STORE_TIMEOUT, the failure policy applies); otherwise the
   * queue is full of live decisions, which is load (SLUICE_STORE_OVERLOADED, never admitted by
   * `failure: 'open'`).
   */
  private full(): SluiceError {
    const { maxPending, timeoutMs } = this.settings;
    // Held calls that timed out mean Redis is not answering, unless it has replied since the
    // latest of them was sent: then they only waited behind a burst (load).
    if (this.abandoned > 0 && this.lastReplyAt <= this.lastAbandonedStart) {
      return heldByClient(timeoutMs, this.abandoned, maxPending);
    }
    return overloaded(this.pending, maxPending);
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
    // Every request's wait starts here, the first turn after the burst that queued it; and what
    // had expired is judged as of now, so that the time this loop takes never expires anything.
    const now = performance.now();
    for (let i = this.stamped; i < this.queue.length; i++) this.queue[i]!.queuedAt = now;
    this.stamped = this.queue.length;
    while (this.queue.length > 0 && (cluster || this.inFlight < MAX_IN_FLIGHT)) {
      const batch = this.takeBatch(cluster);
      // A request that waited out its timeout behind calls that did not answer is not sent.
      let live = 0;
      for (let i = 0; i < batch.length; i++) {
        const request = batch[i]!;
        if (this.expiresAt(request) <= now) this.drop(request);
        else batch[live++] = request;
      }
      batch.length = live;
      if (live === 0) continue;
      const call = batch[0]!.call;
      if (!call.alone && cluster) this.sendBySlot(call, batch);
      else this.start(call.encode(batch, this));
    }
    // Requests left waiting behind calls in flight time out too, even if none of those settles.
    if (this.stamped > 0) this.timer.due(this.expiresAt(this.queue[0]!));
  }

  /**
   * Takes the next call's requests off the head of the queue. A request of a kind that goes
   * alone is taken alone; otherwise the requests of the head's kind that follow it, spread over
   * the free calls, at least SPLIT per call: moderate load gets several calls in flight (Redis
   * and Node overlap), a burst drains in one round. What is queued after goes in the next call,
   * so every call runs in the order it was asked for.
   */
  private takeBatch(cluster: boolean): Pending[] {
    const queue = this.queue;
    const call = queue[0]!.call;
    let taken = 0;
    if (call.alone) taken = 1;
    else {
      let queued = 0;
      for (let i = 0; i < queue.length; i++) queued += queue[i]!.size;
      const free = cluster ? 1 : MAX_IN_FLIGHT - this.inFlight;
      const limit = Math.min(this.settings.maxBatch, Math.max(SPLIT, Math.ceil(queued / free)));
      let size = 0;
      while (
        taken < queue.length &&
        queue[taken]!.call === call &&
        (size === 0 || size + queue[taken]!.size <= limit)
      ) {
        size += queue[taken]!.size;
        taken++;
      }
    }
    this.stamped -= taken;
    if (taken < queue.length) return queue.splice(0, taken);
    this.queue = [];
    return queue;
  }

  /**
   * When a request still waiting to be sent times out: `timeout` after it was queued, but not
   * while Redis keeps answering (the queue drains at Redis' pace, bounded by `maxPending`); a
   * retried one keeps the deadline of its first call. So load alone (a burst larger than one
   * round of calls) does not time requests out, and a Redis that stops answering does.
   */
  private expiresAt(request: Pending): number {
    if (request.deadline !== 0) return request.deadline;
    const since = request.queuedAt > this.lastReleasedAt ? request.queuedAt : this.lastReleasedAt;
    return since + this.settings.timeoutMs;
  }

  /** Times out a request that was never sent. */
  private drop(request: Pending): void {
    this.pending -= request.size;
    const since = request.deadline !== 0 ? request.deadline - this.settings.timeoutMs : request.queuedAt;
    request.reject(this.timeoutSince(since));
  }

  /**
   * The error of a request whose time, started at `since`, ran out: load when Redis replied to
   * something since (it answers, this request only waited behind others), else a timeout.
   */
  private timeoutSince(since: number): SluiceError {
    const { timeoutMs } = this.settings;
    return this.lastReplyAt <= since ? timedOut(timeoutMs) : waitedBehindLoad(timeoutMs);
  }

  /** One script call can only touch keys of one hash slot. */
  private sendBySlot(call: ScriptCall, batch: Pending[]): void {
    const bySlot = new Map<number, Pending[]>();
    for (const request of batch) {
      const list = bySlot.get(request.slot);
      if (list === undefined) bySlot.set(request.slot, [request]);
      else list.push(request);
    }
    for (const list of bySlot.values()) this.start(call.encode(list, this));
  }

  private start(command: Command): void {
    this.inFlight++;
    this.timer.watch(command, this.inFlight);
    this.send(command, false);
  }

  /**
   * Times out the calls past their deadline and the requests that waited past theirs without
   * being sent, then re-arms for the earliest deadline left, if any.
   */
  private expireNow(): void {
    const now = performance.now();
    let next = this.timer.sweep(now, this.expireCommand);
    // The queue is in order of expiry (queued in turn; a retried request goes back to its head).
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
    if (next !== Infinity) this.timer.due(next);
  }

  private send(command: Command, fallback: boolean): void {
    const { client } = this.settings;
    let reply: Promise<unknown>;
    try {
      const script = command.script;
      reply = fallback
        ? client.eval(script.source, command.keys, command.args)
        : client.evalsha(script.sha, command.keys, command.args);
    } catch (error) {
      this.release(command);
      this.fail(command, error);
      return;
    }
    reply.then(
      (value) => {
        this.lastReplyAt = performance.now();
        this.replies++;
        this.release(command);
        this.receive(command, value);
      },
      (error: unknown) => {
        if (redisErrorCode(error) !== undefined) {
          this.lastReplyAt = performance.now();
          this.replies++;
        }
        // The server lost its scripts (restart, failover, SCRIPT FLUSH): send the source, which
        // also loads it again for the next EVALSHA. The call stays in flight meanwhile.
        if (!fallback && !command.done && redisErrorCode(error) === 'NOSCRIPT') {
          this.send(command, true);
          return;
        }
        this.release(command);
        this.fail(command, error);
      },
    );
  }

  /** The client gave the call back: its place in flight and its decisions' places are free. */
  private release(command: Command): void {
    this.lastReleasedAt = performance.now();
    this.inFlight--;
    this.pending -= command.size;
    if (command.done) this.abandoned -= command.size;
    if (this.queue.length > 0) this.schedule();
  }

  /** Marks the call answered; false when it was already. */
  private finish(command: Command): boolean {
    if (command.done) return false;
    command.done = true;
    return true;
  }

  private expire(command: Command): void {
    if (!this.finish(command)) return;
    this.abandoned += command.size;
    // The call's clock started at the earliest deadline less the timeout (or earlier).
    const start = command.deadline - this.settings.timeoutMs;
    if (start > this.lastAbandonedStart) this.lastAbandonedStart = start;
    const error = this.timeoutSince(start);
    for (const request of command.requests) request.reject(error);
  }

  private fail(command: Command, cause: unknown): void {
    if (!this.finish(command)) return;
    const error = storeError(cause);
    for (const request of command.requests) request.reject(error);
  }

  private receive(command: Command, reply: unknown): void {
    if (this.serverClock && Array.isArray(reply)) this.offset.sample(Number(reply[0]));
    if (!this.finish(command)) return;
    const requests = command.requests;
    if (Array.isArray(reply) && reply.length === 2 && Number(reply[1]) === EXPIRED) {
      // Redis started the call after its deadline and changed nothing. Either Node gave up on
      // it already (the timer was late), or the offset to the server's clock was not known yet
      // (the first call): the offset is now learnt, so a request with time left goes again.
      const now = performance.now();
      for (const request of requests) {
        if (!request.retried && request.deadline > now) this.retry(request);
        else request.reject(this.timeoutSince(request.deadline - this.settings.timeoutMs));
      }
      return;
    }
    if (!Array.isArray(reply) || reply.length !== command.replyLength) {
      const error = unavailable('answered a script call with an unexpected reply');
      for (const request of requests) request.reject(error);
      return;
    }
    requests[0]!.call.decode(requests, reply, this);
  }

  /** Queues a request of a call given back once more, at the head: it keeps its deadline. */
  private retry(request: Pending): void {
    request.retried = true;
    this.pending += request.size;
    this.queue.unshift(request);
    this.stamped++;
    this.schedule();
  }
}
