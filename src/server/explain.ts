import { createHash } from 'node:crypto';
import { createClientAddress } from '../keys/client-address.js';
import { MemoryStore } from '../stores/memory/store.js';
import { compilePolicy, type CompiledRule } from './policy/compile.js';
import type { MatchFile } from './policy/file-types.js';
import { loadPolicyFile, type LoadOptions } from './policy/load.js';
import { compileMatch } from './policy/match.js';
import type { RequestInput } from './policy/request.js';

/** What one rule does with the request explained. */
export interface RuleExplanation {
  rule: string;
  matches: boolean;
  /** The conditions of `match` the request fails (a rule that does not match). */
  failed?: string[];
  /** The key's parts, and the key as stored (a pseudonym): for a rule that matches. */
  key?: { parts: string[]; stored: string };
  /**
   * What it decides for a first such request (its buckets fresh): `admit` or `respond` with the
   * status; `not asked` when an earlier rule refused.
   */
  decision?: {
    outcome: 'admit' | 'respond' | 'not asked';
    status: number;
    /**
     * Each limit's decision: `remaining` of its `capacity` (what its bucket holds at most: a
     * token bucket's burst), `limit` per its period; `cost` 0 for a limit of a refused rule
     * that would have admitted (nothing was charged).
     */
    limits: {
      name: string;
      allowed: boolean;
      remaining: number;
      capacity: number;
      limit: number;
      cost: number;
    }[];
  };
}

export interface Explanation {
  request: { method: string; path: string };
  /** Where the client address was read from (`socket`, a proxy header …), never the address. */
  client: string;
  /** How keys are stored: `hmac` (with the policy's secret) or `plain` (without one). */
  keys: 'hmac' | 'plain';
  rules: RuleExplanation[];
  /** The response a first such request gets from all rules (first refusal stops). */
  status: number;
  refusedBy: string[];
}

/**
 * `sluice explain`: which rules of the file match a request, with which keys (as stored: a
 * pseudonym), and what each would decide for a first such request. The rules are built on
 * fresh memory buckets (nothing is connected, nothing is charged anywhere), so the decisions are
 * those of buckets that are full: lists, matches, keys and costs are what it explains.
 */
export async function explainRequest(
  file: string,
  input: RequestInput,
  env?: LoadOptions['env'],
): Promise<Explanation> {
  const loaded = loadPolicyFile(file, env);
  const { policy } = loaded;
  const compiled = compilePolicy(loaded, { store: new MemoryStore(), onError: () => {} });
  try {
    const request = compiled.read(input);
    const { source } = createClientAddress({
      trustedProxies: [...policy.clients.trustedProxies],
      header: policy.clients.proxyHeader,
    })({ peer: input.address, headers: request.headers });
    const keys = policy.clients.secrets.length > 0 ? 'hmac' : 'plain';
    const rules: RuleExplanation[] = [];
    let status = 200;
    const refusedBy: string[] = [];
    for (const rule of compiled.rules) {
      if (!rule.matches(request)) {
        rules.push({ rule: rule.name, matches: false, failed: failedConditions(rule, request) });
        continue;
      }
      const text = rule.keyText(request);
      const stored = keys === 'hmac' ? compiled.keys.current(text) : fingerprint(text);
      const explained: RuleExplanation = {
        rule: rule.name,
        matches: true,
        key: { parts: [...rule.model.key], stored },
      };
      rules.push(explained);
      if (status !== 200) {
        explained.decision = { outcome: 'not asked', status, limits: [] };
        continue;
      }
      const outcome = await rule.guard.check(request, { method: request.method, path: request.path });
      const limits = outcome.decisions.map((d) => ({
        name: d.name,
        allowed: d.allowed,
        remaining: d.remaining,
        capacity: d.capacity,
        limit: d.limit,
        cost: d.cost,
      }));
      if (outcome.action === 'respond') {
        status = outcome.response.status;
        refusedBy.push(rule.name);
        explained.decision = { outcome: 'respond', status, limits };
      } else explained.decision = { outcome: 'admit', status: 200, limits };
    }
    return {
      request: { method: request.method, path: request.path },
      client: source,
      keys,
      rules,
      status,
      refusedBy,
    };
  } finally {
    compiled.close();
  }
}

/**
 * Without a secret the store holds the key's text itself; explain shows a fingerprint of it
 * instead, so that its output carries no address or header value either.
 */
function fingerprint(text: string): string {
  return `plain text, fingerprint sha256:${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;
}

/** The conditions of the rule's `match` that the request fails, each tested alone. */
function failedConditions(rule: CompiledRule, request: Parameters<CompiledRule['matches']>[0]): string[] {
  const match = rule.model.match;
  const failed: string[] = [];
  for (const name of Object.keys(match) as (keyof MatchFile)[]) {
    if (match[name] === undefined) continue;
    const alone = compileMatch({ [name]: match[name] } as MatchFile, `${rule.name}.match`);
    if (!alone(request)) failed.push(name);
  }
  return failed;
}

/** The explanation as text, one line a rule, or as JSON. */
export function formatExplanation(explanation: Explanation, format: 'text' | 'json'): string {
  if (format === 'json') return `${JSON.stringify(explanation, null, 2)}\n`;
  const { request, rules } = explanation;
  const width = Math.max(4, ...rules.map((r) => r.rule.length));
  const lines = [
    `${request.method} ${request.path}: client address from ${clientText(explanation.client)}; keys stored ${
      explanation.keys === 'hmac'
        ? 'as HMACs of the pseudonym secret'
        : 'as they are (no clients.pseudonymSecret)'
    }`,
  ];
  for (const rule of rules) {
    const name = rule.rule.padEnd(width);
    if (!rule.matches) {
      lines.push(`  ${name}  does not match (${rule.failed!.join(', ')})`);
      continue;
    }
    lines.push(`  ${name}  matches; key [${rule.key!.parts.join(', ')}] stored as ${rule.key!.stored}`);
    lines.push(`  ${' '.repeat(width)}  ${decisionText(rule.decision!)}`);
  }
  if (rules.length === 0) lines.push('  (the policy has no rules)');
  lines.push(
    explanation.status === 200
      ? `decision: 200, admitted${rules.some((r) => r.matches) ? '' : ' (no rule matches)'}`
      : `decision: ${explanation.status}, refused by ${explanation.refusedBy.join(', ')}`,
    '(decided on fresh buckets, as for a first such request: nothing was connected or charged)',
  );
  return `${lines.join('\n')}\n`;
}

function clientText(source: string): string {
  if (source === 'socket') return 'the peer (--address)';
  if (source === 'untrusted-peer')
    return 'the peer (--address): it is not a trusted proxy, its header is not read';
  if (source === 'malformed-header') return 'the peer (--address): the proxy header is malformed';
  return `the ${source} header (the peer is a trusted proxy)`;
}

function decisionText(decision: NonNullable<RuleExplanation['decision']>): string {
  if (decision.outcome === 'not asked') return 'not asked: an earlier rule refused';
  // Out of the capacity, not the limit: a token bucket of 1 a second holding 10 has 9 of 10 left.
  const limits = decision.limits.map((l) =>
    !l.allowed
      ? `${l.name} refused`
      : `${l.name} ${l.remaining} of ${l.capacity} left${l.cost === 0 ? ', not charged' : ''}`,
  );
  const detail = limits.length === 0 ? '' : ` (${limits.join('; ')})`;
  return decision.outcome === 'admit'
    ? `would admit${limits.length === 0 ? ' without a limit (allow list)' : ''}${detail}`
    : `would answer ${decision.status}${limits.length === 0 && decision.status === 403 ? ' (deny list)' : ''}${detail}`;
}
