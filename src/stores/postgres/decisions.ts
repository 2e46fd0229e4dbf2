import type { Decision } from '../../core/decision.js';
import type { CallLimit, Rule } from '../../core/rules/rule.js';
import { reserverOf } from '../../core/reservation.js';
import type { BucketState } from '../../core/state.js';
import { newTakeSlot, type TakeSlot } from '../../core/rules/take-slot.js';
import type { AlgorithmBinding } from './algorithms/index.js';
import type { PostgresRow } from './client.js';

/**
 * Turns the state a statement returned (the bucket before the take) into decisions, one per
 * take of a coalesced group, in order, by running the core rule itself on it, as the memory
 * store does: the algorithm's module only says how the row reads as the core's state and at
 * which time to decide. So the numbers agree with the memory store's exactly.
 */
export class DecisionReplay {
  private readonly state: BucketState = { value: 0, window: 0, previous: 0, blockedUntil: 0, blockMs: 0 };
  private now = 0;
  /** The take every replayed decision fills (epoch 0, as the statements keep): none per take. */
  private readonly take: TakeSlot;

  constructor(
    private readonly rule: Rule,
    private readonly name: string,
    private readonly binding: AlgorithmBinding,
  ) {
    this.take = newTakeSlot(name);
  }

  /** Starts from a returned row. */
  start(row: PostgresRow): void {
    this.now = this.binding.read(row, this.state);
    this.take.now = this.now;
  }

  /**
   * The next take's decision; updates the replayed state as the statement did. `commit` false
   * for the entries of an all-or-nothing group that refused, which charged nothing (and so
   * started no block).
   */
  next(cost: number, limit: CallLimit | undefined, commit = true): Decision {
    const take = this.take;
    take.cost = cost;
    take.limit = limit;
    take.commit = commit;
    return this.rule.decide(this.state, take);
  }

  /** A reservation's decision (`reserve` of a rule that has it), as its statement made it. */
  reserve(cost: number, maxWaitMs: number, limit?: CallLimit): Decision {
    return reserverOf(this.rule).call(this.rule, this.state, {
      now: this.now,
      epoch: 0,
      name: this.name,
      cost,
      maxWaitMs,
      limit,
    });
  }
}
