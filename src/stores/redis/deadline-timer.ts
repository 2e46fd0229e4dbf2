import type { Command } from './calls/script-call.js';

/**
 * One timer for every command in flight, armed for the earliest deadline, rather than a timer
 * each. Deadlines mostly grow with each command, so the armed timer usually already fires first
 * and nothing is scheduled: a lone decision does not pay for creating and clearing a timer of its
 * own. Answered commands are dropped when the timer fires or the list grows.
 */
export class DeadlineTimer {
  private flying: Command[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** When the armed timer fires; Infinity when none is armed. */
  private at = Infinity;
  // The timer only schedules `onDue` for the check phase of the event loop, after the poll phase
  // has read the replies that have arrived: a command Redis answered in time is not timed out
  // because Node was busy (a burst, a GC pause) when its deadline passed.
  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.at = Infinity;
    setImmediate(this.onDue);
  };

  /** @param onDue runs once a deadline may have passed: it calls {@link sweep} */
  constructor(private readonly onDue: () => void) {}

  /** Watches a command just sent; `inFlight` is how many commands the client holds. */
  watch(command: Command, inFlight: number): void {
    // Compacted once answered commands are most of the list: amortised O(1) per command.
    if (this.flying.length >= 2 * inFlight + 64) this.flying = this.flying.filter((c) => !c.done);
    this.flying.push(command);
    this.due(command.deadline);
  }

  /** Makes sure the timer fires by `at`. */
  due(at: number): void {
    if (at < this.at) this.arm(at);
  }

  /**
   * Disarms the timer, hands `expire` every unanswered command whose deadline is `now` or
   * earlier, and returns the earliest deadline left (Infinity for none); the caller arms for it.
   */
  sweep(now: number, expire: (command: Command) => void): number {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.at = Infinity;
    let next = Infinity;
    const flying = this.flying;
    this.flying = [];
    for (const command of flying) {
      if (command.done) continue;
      if (command.deadline <= now) expire(command);
      else {
        this.flying.push(command);
        if (command.deadline < next) next = command.deadline;
      }
    }
    return next;
  }

  private arm(at: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.at = at;
    this.timer = setTimeout(this.onTimer, Math.max(0, at - performance.now()));
    this.timer.unref?.();
  }
}
