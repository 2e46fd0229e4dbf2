/** Loading policies from text in tests: the issues as `line:column: message`, or the loaded policy. */
import { MemoryStore } from '../../src/stores/memory/store.js';
import { compilePolicy, type CompiledPolicy } from '../../src/server/policy/compile.js';
import { PolicyError } from '../../src/server/policy/errors.js';
import { loadPolicyText } from '../../src/server/policy/load.js';

/** Every issue of a policy that loading or building refuses, as `line:column: message`. */
export function issuesOf(text: string, env: Record<string, string> = {}): string[] {
  try {
    compilePolicy(loadPolicyText(text, { env }), { store: new MemoryStore() }).close();
  } catch (error) {
    if (error instanceof PolicyError) return error.issues.map((i) => `${i.line}:${i.column}: ${i.message}`);
    throw error;
  }
  throw new Error('the policy was accepted');
}

/** A policy built on a memory store (closed by the caller). */
export function compiled(
  text: string,
  env: Record<string, string> = {},
  store = new MemoryStore(),
): CompiledPolicy {
  return compilePolicy(loadPolicyText(text, { env }), { store });
}

/** A 32-byte secret for tests. */
export const SECRET = 'a test secret of thirty-two bytes';

/** A policy of one rule, login: a token bucket of 10 per 10 minutes per address; `extra` is appended. */
export const loginPolicy = (extra = '') =>
  `version: 1
rules:
  - name: login
    algorithm: token-bucket
    limit: 10
    period: 10m
${extra}`;
