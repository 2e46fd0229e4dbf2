import type { RedisAlgorithmModule } from './algorithm.js';
import { windowCountEncoder } from './window-count.js';

/** What a window aligned to the Unix epoch brings of its own: its kind and its Lua. */
export type AlignedWindowLua = Pick<
  RedisAlgorithmModule,
  'kind' | 'lua' | 'adjustLua' | 'held' | 'luaFunctions'
>;

/** The window a refunded take was made in: the aligned one holding its time. */
const alignedEncoder = windowCountEncoder('windowMs', (at, w) => Math.floor(at / w) * w);

/**
 * A module of a window of `w` ms aligned to the Unix epoch (the fixed and the sliding window):
 * they count alike and differ only in their Lua. Parameters: `penalty`, `ruleLimit`, `w`. A
 * per-call limit; replies of 3 (the window is `w`, known to Node).
 */
export function alignedWindowAlgorithm(own: AlignedWindowLua): RedisAlgorithmModule {
  return { ...own, params: ['penalty', 'ruleLimit', 'w'], callLimit: true, encoder: alignedEncoder };
}
