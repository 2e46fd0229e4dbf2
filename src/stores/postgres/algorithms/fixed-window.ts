import { alignedWindowModule } from './aligned-window.js';

/**
 * Fixed window (src/core/rules/fixed-window.ts): a count per window of `windowMs` aligned to the
 * Unix epoch (see aligned-window.ts). A count outlives its window by nothing.
 */
export const fixedWindowModule = alignedWindowModule('fixed-window', false);
