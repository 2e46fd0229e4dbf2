import { stringify } from 'yaml';
import { MemoryStore } from '../stores/memory/store.js';
import { compilePolicy } from './policy/compile.js';
import { loadPolicyFile, type LoadOptions } from './policy/load.js';
import type { Policy } from './policy/model.js';
import { policyFileOf } from './policy/policy-file-of.js';
import { reservedPathOverlaps } from './policy/reserved-paths.js';

/**
 * `sluice check`: loads the file and builds every rule with the library on a memory store
 * standing in for the file's store (nothing is connected), so that any option the library
 * refuses is found too. Returns the normalized policy as it may be shown (no secret values);
 * throws a PolicyError otherwise. What may be meant but likely is not (a gateway rule for a path
 * the server answers itself) goes to `warn`, one `file:line:column: warning: …` line each.
 */
export function checkPolicyFile(
  file: string,
  env?: LoadOptions['env'],
  warn?: (line: string) => void,
): Policy {
  const loaded = loadPolicyFile(file, env);
  const compiled = compilePolicy(loaded, { store: new MemoryStore() });
  compiled.close();
  for (const overlap of reservedPathOverlaps(loaded.policy)) {
    const { line, column, message } = loaded.issue(overlap.path, overlap.what);
    warn?.(`${file}:${line}:${column}: warning: ${message}\n`);
  }
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
