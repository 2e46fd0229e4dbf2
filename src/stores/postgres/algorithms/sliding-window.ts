import { alignedWindowModule } from './aligned-window.js';

/**
 * Sliding window (src/core/rules/sliding-window.ts): counts of the current and the previous
 * window of `windowMs`, aligned to the Unix epoch (see aligned-window.ts; window-counts.ts weighs
 * the previous count exactly as the core does). A count weighs until the end of the window after
 * its own.
 */
export const slidingWindowModule = alignedWindowModule('sliding-window', true);
