/**
 * What the API does with an item: the library decides (each rule's guard), this module only
 * picks the rules, hands them the request, and writes their outcomes as JSON.
 */
import type { Decision } from '../../core/decision.js';
import { decisiveOf, type HeaderValues } from '../../http/headers.js';
import { EXPOSE_HEADER, mergeExposed } from '../../http/merge-exposed.js';
import type { GuardOutcome } from '../../http/guard.js';
import type { CompiledPolicy, CompiledRule } from '../policy/compile.js';
import type { DecisionRequest, RequestInput } from '../policy/request.js';

export interface KeyedItem {
  rule: string;
  key: string;
  cost?: number;
}
export interface RequestItem {
  request: RequestInput;
  cost?: number;
}
export type Item = KeyedItem | RequestItem;

export interface DecisionJson {
  rule: string;
  name: string;
  allowed: boolean;
  limit: number;
  capacity: number;
  remaining: number;
  /** The units asked: 0 for a peek and for a limit of a refused all-or-nothing rule that did not refuse. */
  cost: number;
  retryAfterMs: number | null;
  resetMs: number;
  source: Decision['source'];
}

export interface Verdict {
  allowed: boolean;
  rules: string[];
  refusedBy: string[];
  remaining: number | null;
  retryAfterMs: number | null;
  resetMs: number | null;
  decisions: DecisionJson[];
}

export interface DecisionResult extends Verdict {
  status: number;
  headers: HeaderValues;
  body?: unknown;
}

/**
 * The rules an item asks, with the request they see, in order. A concurrency rule is the
 * gateway's alone: a caller of the API has no way to release the slot it would take, so a
 * request item never matches one (and a keyed item naming one is refused before this).
 */
export function targetsOf(
  policy: CompiledPolicy,
  item: Item,
): { rules: CompiledRule[]; request: DecisionRequest } {
  if ('rule' in item) return { rules: [policy.rule(item.rule)!], request: policy.keyed(item.key, item.cost) };
  const read = policy.read(item.request);
  const request = item.cost === undefined ? read : { ...read, cost: item.cost };
  return { rules: policy.matching(request).filter((rule) => rule.concurrency === undefined), request };
}

/**
 * Decides an item: each rule's guard in order, the first that answers (429, 403, 503 …) stops.
 * Admitted by every rule, the headers of all are sent together.
 */
export async function decide(policy: CompiledPolicy, item: Item): Promise<DecisionResult> {
  const { rules, request } = targetsOf(policy, item);
  const asked: CompiledRule[] = [];
  const decisions: DecisionJson[] = [];
  const enforcing: Decision[] = [];
  const facts = { method: request.method, path: request.path };
  let headers: HeaderValues | undefined;
  for (const rule of rules) {
    asked.push(rule);
    const outcome: GuardOutcome = await rule.guard.check(request, facts);
    for (const d of outcome.decisions) {
      decisions.push(decisionJson(rule.name, d));
      if (rule.model.mode !== 'shadow') enforcing.push(d);
    }
    if (outcome.action === 'respond') {
      const { status, headers: sent, body } = outcome.response;
      const result = verdict(asked, decisions, enforcing) as DecisionResult;
      result.allowed = false;
      result.status = status;
      result.headers = sent;
      result.body = bodyOf(sent, body);
      return result;
    }
    // The first rule's headers as they are: a copy is made only to merge a second rule's.
    headers = headers === undefined ? outcome.headers : mergeHeaders(headers, outcome.headers);
  }
  const result = verdict(asked, decisions, enforcing) as DecisionResult;
  result.status = 200;
  result.headers = headers ?? {};
  return result;
}

/**
 * A response's body as the result carries it: JSON as a value, a rule's own body of another type
 * (its `response.body`) as the text it sends.
 */
function bodyOf(headers: HeaderValues, body: string): unknown {
  return /[/+]json\b/i.test(headers['Content-Type'] ?? '') ? JSON.parse(body) : body;
}

/**
 * What a decision would say now, charging nothing: the rules' address lists as the guard reads
 * them (a denied client is refused by that rule, a listed one is not limited by it), then peeks
 * of every limit.
 */
export async function peek(policy: CompiledPolicy, item: Item): Promise<Verdict> {
  const { rules, request } = targetsOf(policy, item);
  const asked: CompiledRule[] = [];
  const decisions: DecisionJson[] = [];
  const enforcing: Decision[] = [];
  for (const rule of rules) {
    asked.push(rule);
    const listed = rule.listed(request.address);
    if (listed === 'denied') return { ...verdict(asked, decisions, enforcing), allowed: false };
    if (listed === 'allowed') continue;
    const key = request.key ?? policy.keys.current(rule.keyText(request));
    let refused = false;
    for (const limiter of rule.limiters) {
      const d = await limiter.peek(key);
      decisions.push(decisionJson(rule.name, d));
      if (rule.model.mode !== 'shadow') enforcing.push(d);
      if (!d.allowed && rule.model.mode !== 'shadow') refused = true;
    }
    if (refused) break;
  }
  return verdict(asked, decisions, enforcing);
}

/** Clears an item's buckets in the rules it asks: under the current secret, or every one. */
export async function clear(
  policy: CompiledPolicy,
  item: Item | { key: string; rules?: string[] },
  everySecret: boolean,
): Promise<{ rules: string[]; buckets: number }> {
  // Each rule with the text of the key to clear in it (a request's differs per rule).
  let targets: [CompiledRule, string][];
  if ('request' in item) {
    const request = policy.read(item.request);
    targets = policy.matching(request).map((rule) => [rule, rule.keyText(request)]);
  } else {
    const named = 'rule' in item ? [item.rule] : item.rules;
    const rules = named === undefined ? policy.rules : named.map((name) => policy.rule(name)!);
    targets = rules.map((rule) => [rule, item.key]);
  }
  let buckets = 0;
  for (const [rule, text] of targets) {
    const keys = everySecret ? policy.keys.all(text) : [policy.keys.current(text)];
    for (const limiter of rule.limiters) for (const key of keys) await limiter.reset(key);
    buckets += rule.limiters.length * keys.length;
  }
  return { rules: targets.map(([rule]) => rule.name), buckets };
}

/**
 * The verdict of the rules asked. Built with every field a {@link DecisionResult} has (the
 * response's left undefined), so that `decide` completes it in place instead of copying it.
 */
function verdict(asked: readonly CompiledRule[], decisions: DecisionJson[], enforcing: Decision[]): Verdict {
  const decisive = decisiveOf(enforcing);
  const refusedBy: string[] = [];
  for (const d of enforcing) if (!d.allowed) refusedBy.push(d.name);
  const rules: string[] = [];
  for (const rule of asked) rules.push(rule.name);
  const result: Verdict & Partial<Omit<DecisionResult, keyof Verdict>> = {
    allowed: refusedBy.length === 0,
    rules,
    refusedBy,
    remaining: decisive?.remaining ?? null,
    retryAfterMs: decisive === undefined ? null : finite(decisive.retryAfterMs),
    resetMs: decisive?.resetMs ?? null,
    decisions,
    status: undefined,
    headers: undefined,
    body: undefined,
  };
  return result;
}

function decisionJson(rule: string, d: Decision): DecisionJson {
  return {
    rule,
    name: d.name,
    allowed: d.allowed,
    limit: d.limit,
    capacity: d.capacity,
    remaining: d.remaining,
    cost: d.cost,
    retryAfterMs: finite(d.retryAfterMs),
    resetMs: d.resetMs,
    source: d.source,
  };
}

/** JSON has no Infinity: a cost that can never be admitted has no retry time (null). */
function finite(ms: number): number | null {
  return Number.isFinite(ms) ? ms : null;
}

const listHeaders = new Set(['RateLimit', 'RateLimit-Policy']);

/**
 * The headers of several admitting rules as one set: the IETF fields are lists (one member per
 * limit, joined), `Access-Control-Expose-Headers` is merged, and the legacy `X-RateLimit-*`
 * describe one limit: the one with the fewest units left, as the library chooses.
 */
export function mergeHeaders(sent: HeaderValues, next: HeaderValues): HeaderValues {
  const merged: HeaderValues = { ...sent };
  const legacyWins =
    next['X-RateLimit-Remaining'] !== undefined &&
    (sent['X-RateLimit-Remaining'] === undefined ||
      Number(next['X-RateLimit-Remaining']) < Number(sent['X-RateLimit-Remaining']));
  for (const [name, value] of Object.entries(next)) {
    if (listHeaders.has(name) && merged[name] !== undefined) merged[name] = `${merged[name]}, ${value}`;
    else if (name === EXPOSE_HEADER) merged[name] = mergeExposed(merged[name], value);
    else if (name.startsWith('X-RateLimit-')) {
      if (legacyWins) merged[name] = value;
    } else merged[name] = value;
  }
  return merged;
}
