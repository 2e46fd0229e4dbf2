import type { CallLimit, RuleTake } from './rule.js';

/**
 * A {@link RuleTake} its owner fills before each `decide`: one per bound rule in a store that
 * decides on every request, so that a decision allocates no take. A rule decides synchronously
 * and keeps nothing of its take, so no other call can see the slot half filled.
 */
export interface TakeSlot extends RuleTake {
  now: number;
  epoch: number;
  name: string;
  cost: number;
  limit: CallLimit | undefined;
  commit: boolean;
}

/** An empty slot for the limit `name`, its fields all present so that its shape never changes. */
export function newTakeSlot(name: string): TakeSlot {
  return { now: 0, epoch: 0, name, cost: 0, limit: undefined, commit: false };
}
