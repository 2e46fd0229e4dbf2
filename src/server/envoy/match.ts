import type { EnvoyDomains, EnvoyNode, EnvoyRule } from './config.js';

/** One entry of a request's descriptor. */
export interface Entry {
  readonly key: string;
  readonly value: string;
}

/** What a descriptor found in the configuration. */
export interface Match {
  readonly rule: EnvoyRule;
  /**
   * The text that picks its counter: the domain and every entry's key and value, a value matched
   * by a `share_threshold` wildcard replaced by the wildcard (so all its values share one counter).
   */
  readonly counter: string;
  /**
   * True when upstream would put a value of the request into the match's metrics key
   * (detailed_metric on the rule, or value_to_metric on a level it went through).
   */
  readonly detailed: boolean;
}

/**
 * Finds a descriptor's rule as envoyproxy/ratelimit does, level by level: at each entry an exact
 * `key_value` child, else the first wildcard child (file order) that matches `key_value`, else
 * the `key` child; a rule counts only at the descriptor's last entry (depth must be equal), and
 * once a level matched the next is searched under it only (no backtracking). undefined: no rule.
 */
export function findRule(
  domains: EnvoyDomains,
  domain: string,
  entries: readonly Entry[],
): Match | undefined {
  const root = domains.get(domain);
  if (root === undefined) return undefined;
  let level: EnvoyNode = root;
  let found: EnvoyRule | undefined;
  let shared: (string | undefined)[] | undefined;
  let valued = false;
  for (let i = 0; i < entries.length; i++) {
    const { key, value } = entries[i]!;
    const keyValue = `${key}_${value}`;
    let next = level.children.get(keyValue);
    let wildcard: string | undefined;
    if (next === undefined)
      for (const candidate of level.wildcards)
        if (wildcardMatch(candidate.parts, keyValue)) {
          next = level.children.get(candidate.key);
          wildcard = candidate.key;
          break;
        }
    next ??= level.children.get(key);
    if (next === undefined) break;
    if (next.valueToMetric) valued = true;
    if (wildcard !== undefined && next.shareThreshold) {
      shared ??= [];
      shared[i] = wildcard.slice(key.length + 1);
    }
    if (next.rule !== undefined && i === entries.length - 1) found = next.rule;
    if (next.children.size === 0) break;
    level = next;
  }
  if (found === undefined) return undefined;
  return { rule: found, counter: counterText(domain, entries, shared), detailed: found.detailed || valued };
}

/** The counter of an override (no rule consulted): the domain and the entries as sent. */
export function overrideCounter(domain: string, entries: readonly Entry[]): string {
  return counterText(domain, entries, undefined);
}

/**
 * Domain, then each key and value, every part prefixed with its length so that no two different
 * lists of entries make the same text (a key or value may hold any character).
 */
function counterText(
  domain: string,
  entries: readonly Entry[],
  shared: readonly (string | undefined)[] | undefined,
): string {
  let text = `${domain.length}:${domain}`;
  for (let i = 0; i < entries.length; i++) {
    const { key, value } = entries[i]!;
    const counted = shared?.[i] ?? value;
    text += `|${key.length}:${key}${shared?.[i] === undefined ? '=' : '*'}${counted.length}:${counted}`;
  }
  return text;
}

/**
 * Whether `value` matches a pattern split on `*` (each `*` matches any run of characters, none
 * included): it starts with the first part, ends with the last, and holds the middle ones in
 * order between them without overlap.
 */
export function wildcardMatch(parts: readonly string[], value: string): boolean {
  if (parts.length === 1) return parts[0] === value;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (value.length < first.length + last.length) return false;
  if (!value.startsWith(first) || !value.endsWith(last)) return false;
  let from = first.length;
  const end = value.length - last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i]!;
    const at = value.indexOf(part, from);
    if (at < 0 || at + part.length > end) return false;
    from = at + part.length;
  }
  return true;
}
