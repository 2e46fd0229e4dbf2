import { SluiceError } from '../core/errors.js';

/**
 * What became of one request under one rule (or, for the first three, under the guard before
 * any rule ran):
 * - `allowed-by-list`: the client is on the guard's `allow` list; no rule ran, nothing charged;
 * - `denied`: the client is on the guard's `deny` list; answered 403, no rule ran;
 * - `skipped`: the guard's `skip` predicate let the request through; no rule ran;
 * - `admitted`, `refused`: the rule decided (on its store, or without it for a cost it can never
 *   admit);
 * - `shadow-refused`: a rule in shadow mode would have refused; the request went on;
 * - `failed-open`, `failed-closed`, `insurance`: the store failed and the rule's failure policy
 *   decided (admitted, refused with 503/500, or decided by the in-memory insurance limiter).
 */
export type DecisionOutcome =
  | 'allowed-by-list'
  | 'denied'
  | 'skipped'
  | 'admitted'
  | 'refused'
  | 'shadow-refused'
  | 'failed-open'
  | 'failed-closed'
  | 'insurance';

/** Every outcome, in the order of {@link DecisionOutcome}: for metrics that pre-register labels. */
export const DECISION_OUTCOMES: readonly DecisionOutcome[] = [
  'allowed-by-list',
  'denied',
  'skipped',
  'admitted',
  'refused',
  'shadow-refused',
  'failed-open',
  'failed-closed',
  'insurance',
];

/**
 * One decision, as it is reported to listeners. Bounded and free of request values: the rule's
 * name and the store's kind are configuration; the key appears only as `keyHash`, and only when
 * the channel was made with a `keyHash` function (a pseudonym of your choosing).
 */
export interface DecisionEvent {
  /** The rule's (limiter's) name; undefined for the guard's own outcomes (lists, skip). */
  readonly rule: string | undefined;
  readonly outcome: DecisionOutcome;
  /** The store's kind (`memory`, `redis`, `postgres`); undefined when no rule ran. */
  readonly store: string | undefined;
  /** Units the take asked for (0 for a peek, or when no rule ran). */
  readonly cost: number;
  /** Units left after the decision (0 when no rule ran). */
  readonly remaining: number;
  /** Ms until a retry can succeed: 0 when admitted, Infinity when never. */
  readonly retryAfterMs: number;
  /** Ms the store took to answer, by the monotonic clock; 0 when no store was asked. */
  readonly storeLatencyMs: number;
  /** The key's pseudonym from the channel's `keyHash`, when it has one; otherwise undefined. */
  readonly keyHash: string | undefined;
}

/**
 * A limiter's store breaker opened (the store is known to be failing: the failure policy decides)
 * or closed again (the store answers). Configuration only: no request value.
 */
export interface StoreHealthEvent {
  /** The limiter's name. */
  readonly rule: string;
  /** The store's kind (`redis`, `postgres`, …). */
  readonly store: string;
  /** The breaker's new state. */
  readonly breaker: 'open' | 'closed';
  /** When it changed, on the limiter's clock (ms since the Unix epoch). */
  readonly at: number;
}

/** A listener of {@link StoreHealthEvent}s; runs synchronously, on the path of the call that moved the breaker. */
export type StoreHealthListener = (event: StoreHealthEvent) => void;

/** A listener of {@link DecisionEvents}. It runs synchronously on the request's path: keep it short. */
export type DecisionListener = (event: DecisionEvent) => void;

/** Options of {@link DecisionEvents}. */
export interface DecisionEventsOptions {
  /**
   * Opt-in: a function turning a key into a pseudonym for `DecisionEvent.keyHash`, e.g. an HMAC
   * with a secret of yours. Without it, events carry no trace of the key. Keys may be raw client
   * addresses: never return the key itself.
   */
  keyHash?: (key: string) => string;
  /**
   * The outcomes whose events carry `keyHash`; the others carry none and cost no hash. A
   * listener that only looks at refusals names them here, so that the admitted requests (most
   * of them) pay nothing for it.
   * @default every outcome
   * @example
   * new DecisionEvents({ keyHash, keyHashOutcomes: ['refused', 'shadow-refused'] })
   */
  keyHashOutcomes?: readonly DecisionOutcome[];
  /**
   * Where a listener that throws is reported (at most once a minute; the event stays delivered
   * to the other listeners, and the decision is unaffected).
   * @default console.error
   */
  onListenerError?: (error: unknown) => void;
}

const LISTENER_ERROR_INTERVAL_MS = 60_000;

/**
 * A channel of decision events. Every limiter has one (`limiter.events`); pass one channel to
 * several limiters and guards (`events` option) to listen to all of them in one place, e.g. to
 * bind them to metrics (`sluice/otel`). Emitting costs a property read when no one listens: the
 * event object is only built for listeners.
 *
 * @example
 * const events = new DecisionEvents();
 * const off = events.subscribe((event) => { if (event.outcome === 'refused') refusals++; });
 * const login = createLimiter({ name: 'login', rule, store, events });
 * off(); // unsubscribes
 */
export class DecisionEvents {
  private listeners: readonly DecisionListener[] = [];
  private healthListeners: readonly StoreHealthListener[] = [];
  /** The pseudonym function, when the channel reports keys at all. */
  readonly keyHash: ((key: string) => string) | undefined;
  private readonly onListenerError: (error: unknown) => void;
  /** The outcomes hashed, when not every one is. */
  private readonly hashed: ReadonlySet<DecisionOutcome> | undefined;
  private lastReportAt = -Infinity;

  constructor(options: DecisionEventsOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new SluiceError('SLUICE_CONFIG', 'DecisionEvents options must be an object');
    }
    const { keyHash, keyHashOutcomes, onListenerError = defaultListenerError } = options;
    if (keyHash !== undefined && typeof keyHash !== 'function') {
      throw new SluiceError('SLUICE_CONFIG', 'DecisionEvents keyHash must be a function (key) => pseudonym');
    }
    if (typeof onListenerError !== 'function') {
      throw new SluiceError('SLUICE_CONFIG', 'DecisionEvents onListenerError must be a function');
    }
    if (
      keyHashOutcomes !== undefined &&
      (!Array.isArray(keyHashOutcomes) || !keyHashOutcomes.every((o) => DECISION_OUTCOMES.includes(o)))
    ) {
      throw new SluiceError(
        'SLUICE_CONFIG',
        'DecisionEvents keyHashOutcomes must be an array of decision outcomes (see DECISION_OUTCOMES)',
      );
    }
    this.keyHash = keyHash;
    this.hashed = keyHashOutcomes === undefined ? undefined : new Set(keyHashOutcomes);
    this.onListenerError = onListenerError;
  }

  /** True while someone listens: emitters check it before building an event. */
  get listening(): boolean {
    return this.listeners.length > 0;
  }

  /**
   * Adds a listener; returns the function that removes it.
   * @throws SluiceError `SLUICE_CONFIG` for a listener that is not a function
   */
  subscribe(listener: DecisionListener): () => void {
    if (typeof listener !== 'function') {
      throw new SluiceError('SLUICE_CONFIG', 'DecisionEvents.subscribe needs a function (event) => void');
    }
    // A new array per change: an emit in progress keeps iterating the one it started with.
    this.listeners = [...this.listeners, listener];
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  /** True while someone listens to store health changes. */
  get listeningHealth(): boolean {
    return this.healthListeners.length > 0;
  }

  /**
   * Adds a listener of the store breakers' changes ({@link StoreHealthEvent}: a limiter's store
   * known to be failing, or answering again); returns the function that removes it.
   * @throws SluiceError `SLUICE_CONFIG` for a listener that is not a function
   * @example
   * limiter.events.subscribeHealth((e) => log.warn({ rule: e.rule, breaker: e.breaker }, 'store health'));
   */
  subscribeHealth(listener: StoreHealthListener): () => void {
    if (typeof listener !== 'function') {
      throw new SluiceError(
        'SLUICE_CONFIG',
        'DecisionEvents.subscribeHealth needs a function (event) => void',
      );
    }
    this.healthListeners = [...this.healthListeners, listener];
    return () => {
      this.healthListeners = this.healthListeners.filter((l) => l !== listener);
    };
  }

  /** Delivers a store health change to its listeners; one that throws never reaches the caller. */
  emitHealth(event: StoreHealthEvent): void {
    const listeners = this.healthListeners;
    for (let i = 0; i < listeners.length; i++) {
      try {
        (listeners[i] as StoreHealthListener)(event);
      } catch (error) {
        this.reportListenerError(error);
      }
    }
  }

  /** Delivers `event` to every listener; a listener that throws never reaches the caller. */
  emit(event: DecisionEvent): void {
    const listeners = this.listeners;
    for (let i = 0; i < listeners.length; i++) {
      try {
        (listeners[i] as DecisionListener)(event);
      } catch (error) {
        this.reportListenerError(error);
      }
    }
  }

  /** The key as events may carry it: its pseudonym, or nothing (also when the hash throws). */
  hashOf(key: string): string | undefined {
    if (this.keyHash === undefined) return undefined;
    try {
      const hash = this.keyHash(key);
      return typeof hash === 'string' && hash !== key ? hash : undefined;
    } catch (error) {
      this.reportListenerError(error);
      return undefined;
    }
  }

  /** The key as an event of `outcome` carries it: {@link hashOf}, for the outcomes hashed. */
  hashFor(outcome: DecisionOutcome, key: string): string | undefined {
    if (this.hashed !== undefined && !this.hashed.has(outcome)) return undefined;
    return this.hashOf(key);
  }

  private reportListenerError(error: unknown): void {
    const now = performance.now();
    if (now - this.lastReportAt < LISTENER_ERROR_INTERVAL_MS) return;
    this.lastReportAt = now;
    try {
      this.onListenerError(error);
    } catch {
      // A reporter that throws is not allowed to break a decision either.
    }
  }
}

function defaultListenerError(error: unknown): void {
  // The error's class only: a listener's message may quote what it was given.
  const kind = error instanceof Error ? error.name : typeof error;
  console.error(
    `sluice: a decision event listener threw (${kind}); further errors are reported at most once a minute`,
  );
}
