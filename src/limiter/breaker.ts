import type { Clock } from '../core/clock.js';
import { parseTimerDuration, type Duration } from '../core/duration.js';
import { configError } from '../core/errors.js';
import { checkOptionKeys } from '../core/options.js';

/**
 * Options of a limiter's store breaker (`createLimiter({ breaker })`): when the store counts as
 * failing, so that `failure: 'open'` and the insurance limiter may stand in for it.
 *
 * @example
 * createLimiter({ name: 'api', rule, store, failure: 'open', breaker: { failures: 10, window: '2s' } })
 */
export interface BreakerOptions {
  /**
   * Consecutive store failures (connection errors or timeouts, with no successful reply between
   * them) before the breaker opens. A whole number from 1.
   * @default 5
   */
  failures?: number;
  /**
   * How long those failures must span, with no successful reply, before the breaker opens: a
   * burst of timeouts on a store that keeps answering never spans it. Five seconds: a healthy
   * store on a starved machine can go a second without a reply read, while a hung one stays silent.
   * @default "5s"
   */
  window?: Duration;
  /** While open, one call goes to the store as a probe this often; its success closes the breaker. @default "200ms" */
  probeInterval?: Duration;
}

/** A breaker's state: `closed` while the store answers, `open` while it is known to be failing. */
export type BreakerState = 'closed' | 'open';

/** What a limiter knows of its store's health, for readiness checks and metrics. */
export interface StoreHealth {
  /** `open`: the store is failing (the failure policy decides); `closed`: it answers. */
  readonly breaker: BreakerState;
  /** When the breaker last changed state (the limiter's clock, ms); 0 before any change. */
  readonly since: number;
  /** Consecutive failures since the last successful reply. */
  readonly consecutiveFailures: number;
  /** How many times the breaker has opened since the limiter was created. */
  readonly openings: number;
}

/** Called when a breaker opens or closes, with the new state and the instant (limiter's clock). */
export type BreakerListener = (state: BreakerState, at: number) => void;

/** The defaults, in one place. */
export const breakerDefaults = { failures: 5, window: '5s', probeInterval: '200ms' } as const;

const breakerKeys = ['failures', 'window', 'probeInterval'] as const;

function noReplies(): number {
  return 0;
}

/** Resolved settings of a {@link Breaker}. */
export interface BreakerSettings {
  readonly failures: number;
  readonly windowMs: number;
  readonly probeIntervalMs: number;
}

/**
 * Reads `createLimiter`'s `breaker` option (undefined: the defaults).
 * @throws SluiceError `SLUICE_CONFIG` / `SLUICE_DURATION` naming the option and the type expected
 */
export function readBreakerOptions(owner: string, options: unknown): BreakerSettings {
  if (options === undefined) options = {};
  checkOptionKeys(`${owner} breaker`, options, breakerKeys);
  const {
    failures = breakerDefaults.failures,
    window = breakerDefaults.window,
    probeInterval = breakerDefaults.probeInterval,
  } = options as BreakerOptions;
  if (typeof failures !== 'number' || !Number.isSafeInteger(failures) || failures < 1)
    throw configError(`${owner} breaker.failures`, 'a whole number from 1', failures);
  return {
    failures,
    windowMs: parseTimerDuration(window, `${owner} breaker.window`),
    probeIntervalMs: parseTimerDuration(probeInterval, `${owner} breaker.probeInterval`),
  };
}

/**
 * A circuit breaker over one limiter's store calls. It tells a store that is failing (its calls
 * keep failing or timing out, and none has succeeded for a while) from one that is only busy (a
 * burst times out some calls in sluice's own queue while others are answered): only the first
 * lets a failure policy admit or stand in.
 *
 * - closed: every call goes to the store. A success clears the streak of failures. The breaker
 *   opens at a failure that makes the streak `failures` long when its calls were made at least
 *   `window` apart and its failures handled at least `window` apart (so calls made over that
 *   long all failed, and no reply came between).
 * - open: calls are answered by the failure policy without asking the store, except one probe
 *   every `probeInterval`; any success (a probe's, or a call's sent before it opened) closes it.
 *
 * No timer: the state moves only when a call asks or settles, on the limiter's clock. The check on
 * a call's path while closed is one field compare.
 */
export class Breaker {
  /** True while open: read on every call. */
  isOpen = false;
  /** Failures since the last success. */
  private streak = 0;
  /** The earliest and the latest call of the streak (the limiter's clock when each was made). */
  private firstCall = 0;
  private lastCall = 0;
  /** When the streak's first failure was handled. */
  private firstSeen = 0;
  /** The store's reply count when the streak began. */
  private repliesAtStart = 0;
  private nextProbeAt = 0;
  private changedAt = 0;
  private openings = 0;

  constructor(
    private readonly settings: BreakerSettings,
    private readonly clock: Clock,
    private readonly listener?: BreakerListener,
    /** How many replies the store has read from its server, late ones included (`store.replies`). */
    private readonly replies: () => number = noReplies,
  ) {}

  /** A successful reply: cheap when nothing failed (one compare). */
  succeeded(): void {
    if (this.streak === 0 && !this.isOpen) return;
    this.streak = 0;
    if (this.isOpen) this.change(false, this.clock());
  }

  /**
   * A connection error or timeout of a call made at `calledAt` (the limiter's clock when the call
   * was made); returns whether the breaker is open once it is counted (the store is then known to
   * be failing). The window must pass twice: between the calls of the streak, and between the
   * moments their failures are handled. A burst made in one tick spans no time between its calls,
   * however long answering its tens of thousands of timeouts keeps the process busy; a burst
   * whose own loop takes longer than the window (a starved process) is handled in a moment.
   */
  failed(calledAt: number = this.clock()): boolean {
    const now = this.clock();
    const replies = this.replies();
    // The store replied since the streak began (late, to calls already answered by a timeout): it
    // answers, so the streak starts again here.
    if (this.streak === 0 || replies !== this.repliesAtStart) {
      this.streak = 0;
      this.firstCall = calledAt;
      this.lastCall = calledAt;
      this.firstSeen = now;
      this.repliesAtStart = replies;
    } else if (calledAt < this.firstCall) this.firstCall = calledAt;
    else if (calledAt > this.lastCall) this.lastCall = calledAt;
    this.streak++;
    const windowMs = this.settings.windowMs;
    if (
      !this.isOpen &&
      this.streak >= this.settings.failures &&
      this.lastCall - this.firstCall >= windowMs &&
      now - this.firstSeen >= windowMs
    ) {
      this.openings++;
      this.nextProbeAt = now + this.settings.probeIntervalMs;
      this.change(true, now);
    }
    return this.isOpen;
  }

  /**
   * Whether a call may go to the store while the breaker is open: true once per `probeInterval`
   * (that call is the probe). Callers check {@link isOpen} first.
   */
  probe(now: number = this.clock()): boolean {
    if (now < this.nextProbeAt) return false;
    this.nextProbeAt = now + this.settings.probeIntervalMs;
    return true;
  }

  /**
   * Whether a call made at `calledAt` was made while the breaker was open. A call made before it
   * opened was sent to a store thought to answer; its timeout is one of the calls that opened
   * the breaker, or a call queued behind them (a burst), and is load, not a decision the
   * failure policy may admit. Only calls made once the store is known to be failing are.
   */
  madeWhileOpen(calledAt: number): boolean {
    return this.isOpen && calledAt >= this.changedAt;
  }

  /** The state, for `stats()`, readiness and metrics. */
  health(): StoreHealth {
    return {
      breaker: this.isOpen ? 'open' : 'closed',
      since: this.changedAt,
      consecutiveFailures: this.streak,
      openings: this.openings,
    };
  }

  private change(open: boolean, at: number): void {
    this.isOpen = open;
    this.changedAt = at;
    this.listener?.(open ? 'open' : 'closed', at);
  }
}
