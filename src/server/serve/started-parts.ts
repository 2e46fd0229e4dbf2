/**
 * The parts of a server started so far (the echo upstream, the store, the policy, Envoy's
 * service, the gateway), each with how it stops. A step of the start-up that fails stops what
 * started before it, and stopping the server stops them all: in both cases the last started
 * first, so nothing is left using a part already stopped.
 */
export class StartedParts {
  private readonly stops: (() => unknown)[] = [];

  /** Adds a part that started, with how to stop it. */
  add(stop: () => unknown): void {
    this.stops.push(stop);
  }

  /**
   * The result of one start-up step; when it fails, every part started so far stops and the
   * step's error (or what `failure` makes of it) is thrown.
   */
  async attempt<T>(step: () => T | Promise<T>, failure?: (error: unknown) => Error): Promise<T> {
    try {
      return await step();
    } catch (error) {
      await this.stopAll();
      throw failure === undefined ? error : failure(error);
    }
  }

  /** Stops every part, the last started first; each part once. */
  async stopAll(): Promise<void> {
    while (this.stops.length > 0) await this.stops.pop()!();
  }
}
