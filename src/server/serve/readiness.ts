/**
 * /readyz asks the store at most once per interval, whatever the number of callers: the answer
 * is kept for {@link READY_INTERVAL_MS}, and callers that come while a check runs share it. The
 * endpoint needs no token and is on the public port in gateway mode, so each anonymous call
 * must not cost the store a statement (a flood of them would starve the decisions).
 */

/** How long one answer of the store's check stands for every /readyz call. */
export const READY_INTERVAL_MS = 1000;

/** Options of {@link cachedReadiness}. */
export interface ReadinessOptions {
  /** How long one answer stands. @default READY_INTERVAL_MS */
  intervalMs?: number;
  /** The decisions' own deadline: a check that takes longer says "unavailable". */
  deadlineMs: number;
  /** A monotonic clock (ms). @default performance.now */
  now?: () => number;
}

/**
 * A readiness check that runs `probe` at most once per interval and at most one at a time:
 * a probe still running when its deadline passes answers false, and the next one starts only
 * once it has answered (a stalled store is never sent a second probe beside the first).
 */
export function cachedReadiness(
  probe: () => Promise<boolean>,
  options: ReadinessOptions,
): () => Promise<boolean> {
  const intervalMs = options.intervalMs ?? READY_INTERVAL_MS;
  const now = options.now ?? (() => performance.now());
  let answer = false;
  let answeredAt = -Infinity;
  let running: Promise<boolean> | undefined;
  /** A probe is in flight (its deadline may have passed): none other starts. */
  let probing = false;
  return () => {
    if (running !== undefined) return running;
    if (now() - answeredAt < intervalMs) return Promise.resolve(answer);
    if (probing) return Promise.resolve(false);
    probing = true;
    const work = probe().then(
      (ok) => ok === true,
      () => false,
    );
    void work.then(() => (probing = false));
    running = within(work, options.deadlineMs).then((ok) => {
      answer = ok === true;
      answeredAt = now();
      running = undefined;
      return answer;
    });
    return running;
  };
}

/** What `work` resolves to within `ms`, else undefined (the work goes on unwatched). */
export async function within<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
