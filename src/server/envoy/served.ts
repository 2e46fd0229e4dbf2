import type { EnvoyModel } from '../policy/model.js';
import { policyDefaults } from '../policy/normalize.js';
import type { ServedPolicy } from '../serve/server.js';
import type { ServedEnvoy } from './service.js';

/** The settings of a policy whose domains all come from `--envoy-config`. */
const defaults: EnvoyModel = {
  grpcPort: undefined,
  shadowMode: false,
  headers: policyDefaults.headers,
  dynamicMetadata: false,
  domains: [],
};

const cache = new WeakMap<ServedPolicy, ServedEnvoy>();

/** What Envoy's service decides by under a served policy; undefined when it has no domains. */
export function servedEnvoy(served: ServedPolicy): ServedEnvoy | undefined {
  if (served.envoy === undefined) return undefined;
  let envoy = cache.get(served);
  if (envoy === undefined) {
    envoy = {
      domains: served.envoy,
      settings: served.compiled.policy.envoy ?? defaults,
      keys: served.compiled.keys,
    };
    cache.set(served, envoy);
  }
  return envoy;
}
