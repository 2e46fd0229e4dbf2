import { stringify } from 'yaml';
import { MemoryStore } from '../stores/memory/store.js';
import { compilePolicy } from './policy/compile.js';
import { loadPolicyFile, type LoadOptions } from './policy/load.js';
import type { Policy } from './policy/model.js';
import { policyFileOf } from './policy/policy-file-of.js';

/**
 * `sluice check`: loads the file and builds every rule with the library on a memory store
 * standing in for the file's store (nothing is connected), so that any option the library
 * refuses is found too. Returns the normalized policy as it may be shown (no secret values);
 * throws a PolicyError otherwise.
 */
export function checkPolicyFile(file: string, env?: LoadOptions['env']): Policy {
  const loaded = loadPolicyFile(file, env);
  const compiled = compilePolicy(loaded, { store: new MemoryStore() });
  compiled.close();
  return loaded.printable();
}

/**
 * The policy as `sluice check` prints it: as a policy file with every default written out, which
 * loads again into the same policy (JSON is YAML too).
 */
export function formatPolicy(policy: Policy, format: 'json' | 'yaml'): string {
  const file = policyFileOf(policy);
  return format === 'json' ? `${JSON.stringify(file, null, 2)}\n` : stringify(file);
}
