/** Waits `ms` milliseconds, or rejects with `signal.reason` as soon as `signal` aborts. */
export type Sleep = (ms: number, signal: AbortSignal | undefined) => Promise<void>;

/**
 * The default {@link Sleep}: a `setTimeout` that an AbortSignal cancels at once, so a page that
 * navigates away or a user who presses "cancel" never waits out a long Retry-After.
 * Works in browsers and Node alike (no `node:timers`).
 *
 * @default the sleep of every retrying fetch
 * @example await abortableSleep(1000, controller.signal)
 */
export const abortableSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/**
 * Runs an injected sleep but settles the moment `signal` aborts, even if that sleep ignores the
 * signal: "an AbortSignal cancels a wait at once" must not depend on the injected function.
 */
export function sleepUnlessAborted(sleep: Sleep, ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return sleep(ms, undefined);
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    sleep(ms, signal).then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** The error an aborted signal stands for; old runtimes leave `reason` undefined. */
export function abortReason(signal: AbortSignal | undefined): unknown {
  return signal?.reason ?? new DOMException('This operation was aborted', 'AbortError');
}
