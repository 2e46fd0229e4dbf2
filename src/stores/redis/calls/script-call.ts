/*
 * What a call module (take.ts, adjust.ts, reserve.ts, lease.ts) and the pipeline (pipeline.ts)
 * share. The pipeline queues requests, sends commands and times them out; a call module turns
 * the requests of its kind into a command (keys, arguments, the script) and the command's reply
 * into their answers. Neither reads what the other owns.
 */

/** A script and its SHA1, for EVALSHA with the EVAL fallback. */
export interface Script {
  readonly source: string;
  readonly sha: string;
}

/** What a call module reads of the pipeline while it encodes or decodes. */
export interface CallContext {
  /** True: the scripts read the server's TIME; false: they decide at the caller's `now`. */
  readonly serverClock: boolean;
  /** Extra TTL for every write on the caller's clock, in ms. */
  readonly slackMs: number;
  /** The server's clock minus ours, learnt from every reply (0 before the first). */
  readonly offsetMs: number;
  /**
   * Starts the clock of the requests of a command about to be sent (a retried one keeps its
   * own), and returns the command's deadline: the earliest among them.
   */
  startClocks(requests: readonly Pending[]): number;
  /**
   * A command's deadline on the server's clock, for the script to check at its start (empty on
   * the caller's clock).
   */
  serverDeadline(deadline: number): string;
  /**
   * Queues a request of an answered command once more, at the head, keeping its deadline; false
   * when it went once more already (the call module then answers it).
   */
  retryOnce(request: Pending): boolean;
}

/** One kind of request: how its requests go to Redis and how their answers come back. */
export interface ScriptCall {
  /**
   * True: every request goes in a command of its own. False: requests of this kind queued one
   * after another go together, up to the batch size, per hash slot on a Cluster.
   */
  readonly alone: boolean;
  /** The command carrying `requests` (one, when {@link alone}), all of this kind and of one slot. */
  encode(requests: Pending[], context: CallContext): Command;
  /**
   * Answers the requests of a command from its reply: an array of the length the command
   * expected, whose first item is the server's time, and not the status of a late start.
   */
  decode(requests: readonly Pending[], reply: readonly unknown[], context: CallContext): void;
}

/**
 * A request waiting for Redis. One class for every kind keeps the hot path monomorphic. The
 * pipeline reads its kind, key, slot, size and times; the four fields after them belong to its
 * call module, which alone reads them (a rule, a group or an operation; a cost; a per-call limit
 * or tier; what else the call needs).
 */
export class Pending {
  resolve!: (value: never) => void;
  reject!: (error: unknown) => void;
  retried = false;
  /**
   * When it was queued, as the pipeline sees it: the pipeline's first run after the synchronous
   * burst that queued it (20,000 takes in one tick are the caller's time, not the store's); 0
   * before. On the monotonic clock (performance.now()), as every time here: wall-clock jumps do
   * not matter.
   */
  queuedAt = 0;
  /** When it times out once sent: `timeout` after its first command was sent; 0 before. */
  deadline = 0;

  constructor(
    readonly call: ScriptCall,
    readonly key: string,
    /** Decisions it stands for against `maxPending`: the entries of a group, else 1. */
    readonly size: number,
    /** The caller's time (ignored on the server's clock). */
    readonly now: number,
    readonly slot: number,
    readonly subject: unknown,
    readonly cost: number,
    readonly limit: unknown,
    readonly detail: unknown,
  ) {}
}

/** One script call, as a call module built it for the pipeline to send. */
export class Command {
  /** Answered: by its reply, a failure or its timeout. The driver may still hold it. */
  done = false;
  /** Decisions in it, held against `maxPending` until the driver lets go. */
  readonly size: number;

  constructor(
    readonly requests: Pending[],
    readonly keys: string[],
    readonly args: string[],
    /** The length of the reply expected. */
    readonly replyLength: number,
    readonly script: Script,
    /** When its requests time out: the earliest deadline among them. */
    readonly deadline: number,
  ) {
    let size = 0;
    for (let i = 0; i < requests.length; i++) size += requests[i]!.size;
    this.size = size;
  }
}
