/**
 * A rule is a value of the algorithm contract (`algorithm.ts`): re-exported here under the name
 * the rest of the code imports it by.
 */
export type { Rule, StateShape, BucketTier, CallLimit } from './algorithm.js';
