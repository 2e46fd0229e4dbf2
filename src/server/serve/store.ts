import type { Store } from '../../store.js';
import { MemoryStore } from '../../stores/memory.js';
import type { StoreFile } from '../policy/model.js';

/** A store opened from the policy, with its health check and its end. */
export interface OpenedStore {
  readonly store: Store;
  readonly type: StoreFile['type'];
  /** True when the store answers now. */
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

/** Opens the policy's store. */
export async function openStore(config: StoreFile): Promise<OpenedStore> {
  if (config.type === 'memory') {
    const store = new MemoryStore();
    return { store, type: 'memory', ready: async () => true, close: async () => {} };
  }
  throw new Error(`the ${config.type} store is not served yet`);
}
