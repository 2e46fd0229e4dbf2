import type { DecisionOutcome } from '../snapshot-types.js';

/**
 * The Okabe–Ito palette, told apart under the common colour blindnesses, and a line pattern per
 * outcome besides, so that no series is known by its colour alone.
 */
export const OUTCOME_STYLE: Record<DecisionOutcome, { colour: string; dash: number[]; width: number }> = {
  admitted: { colour: '#0072B2', dash: [], width: 2 },
  refused: { colour: '#D55E00', dash: [], width: 3 },
  'shadow-refused': { colour: '#CC79A7', dash: [8, 4], width: 2 },
  'failed-open': { colour: '#009E73', dash: [2, 3], width: 2 },
  'failed-closed': { colour: '#000000', dash: [10, 3, 2, 3], width: 2 },
  insurance: { colour: '#56B4E9', dash: [2, 6], width: 2 },
  'allowed-by-list': { colour: '#E69F00', dash: [14, 4], width: 2 },
  denied: { colour: '#7F7F7F', dash: [4, 4], width: 2 },
  skipped: { colour: '#7F7F7F', dash: [1, 4], width: 1 },
};

export const LATENCY_STYLE = {
  p50: { colour: '#0072B2', dash: [] as number[] },
  p99: { colour: '#D55E00', dash: [8, 4] },
};
