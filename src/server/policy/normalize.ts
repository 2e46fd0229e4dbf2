import type { LimitFile, LimitOptionsFile, PolicyFile, RuleFile } from './file-types.js';
import type { LimitModel, Policy, RuleModel } from './model.js';

/** The defaults of a policy, in one place (docs/server.md lists them). */
export const policyDefaults = {
  store: { type: 'memory' },
  trustedProxies: ['loopback'],
  proxyHeader: 'x-forwarded-for',
  ipv6Prefix: 64,
  failure: 'closed',
  headers: 'draft',
  mode: 'enforce',
  key: ['address'],
  cost: 1,
} as const;

/** The file (already valid against the schema) with every default written out. */
export function normalizePolicy(file: PolicyFile): Policy {
  const defaults = {
    failure: file.defaults?.failure ?? policyDefaults.failure,
    headers: file.defaults?.headers ?? policyDefaults.headers,
    mode: file.defaults?.mode ?? policyDefaults.mode,
  };
  const clients = file.clients ?? {};
  return {
    version: 1,
    store: file.store ?? policyDefaults.store,
    clients: {
      trustedProxies: clients.trustedProxies ?? [...policyDefaults.trustedProxies],
      proxyHeader: clients.proxyHeader ?? policyDefaults.proxyHeader,
      ipv6Prefix: clients.ipv6Prefix ?? policyDefaults.ipv6Prefix,
      secrets:
        clients.pseudonymSecret === undefined
          ? []
          : [clients.pseudonymSecret, ...(clients.previousSecrets ?? [])],
    },
    defaults,
    tokens: file.auth?.tokens ?? [],
    hosts: file.hosts ?? [],
    upstream: file.upstream,
    envoy:
      file.envoy === undefined
        ? undefined
        : {
            grpcPort: file.envoy.grpcPort,
            shadowMode: file.envoy.shadowMode ?? false,
            headers: file.envoy.headers ?? policyDefaults.headers,
            dynamicMetadata: file.envoy.dynamicMetadata ?? false,
            domains: file.envoy.domains,
          },
    rules: file.rules.map((rule) => normalizeRule(rule, defaults)),
  };
}

function normalizeRule(rule: RuleFile, defaults: Policy['defaults']): RuleModel {
  const listed: readonly LimitFile[] = 'limits' in rule ? rule.limits : [inlineLimit(rule)];
  const mode = rule.mode ?? defaults.mode;
  return {
    name: rule.name,
    match: rule.match ?? {},
    key: rule.key ?? [...policyDefaults.key],
    cost: rule.cost ?? policyDefaults.cost,
    // A shadow limit never refuses, not even when its store fails: its failure policy is open.
    failure: rule.failure ?? (mode === 'shadow' ? 'open' : defaults.failure),
    headers: rule.headers ?? defaults.headers,
    mode,
    allow: rule.allow ?? [],
    deny: rule.deny ?? [],
    limits: listed.map((limit, i) => normalizeLimit(limit, limitName(rule.name, limit.name, i))),
  };
}

/** The limit options written in a rule itself. */
function inlineLimit(rule: RuleFile): LimitOptionsFile {
  const r = rule as RuleFile & LimitOptionsFile;
  switch (r.algorithm) {
    case 'token-bucket':
      return pick({
        algorithm: r.algorithm,
        limit: r.limit,
        period: r.period,
        burst: r.burst,
        penalty: r.penalty,
        block: r.block,
      });
    case 'fixed-window':
    case 'sliding-window':
      return pick({
        algorithm: r.algorithm,
        limit: r.limit,
        window: r.window,
        penalty: r.penalty,
        block: r.block,
      });
    case 'calendar-quota':
      return pick({
        algorithm: r.algorithm,
        limit: r.limit,
        per: r.per,
        timeZone: r.timeZone,
        weekStart: r.weekStart,
        penalty: r.penalty,
        block: r.block,
      });
  }
}

function normalizeLimit(limit: LimitFile, name: string): LimitModel {
  const { name: _own, ...options } = limit;
  // A token bucket's burst defaults to its limit: a period's worth may be spent at once.
  if (options.algorithm === 'token-bucket')
    return { name, ...options, burst: options.burst ?? options.limit };
  if (options.algorithm === 'calendar-quota') return { name, per: 'day', ...options };
  return { name, ...options };
}

/** The object without its undefined fields. */
function pick<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** A limit's name: its own, else the rule's for the first and `rule:2`, `rule:3` … after. */
export function limitName(rule: string, own: string | undefined, index: number): string {
  return own ?? (index === 0 ? rule : `${rule}:${index + 1}`);
}
