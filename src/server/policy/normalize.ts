import type { LimitFile, LimitOptionsFile, PolicyFile, RuleFile } from './file-types.js';
import { ruleEntry } from '../../core/rules/index.js';
import { concurrencyModel, isConcurrencyFile } from './concurrency.js';
import { normalizeHost } from './host.js';
import {
  DEFAULT_ADMIN_PORT,
  type LimitModel,
  type Policy,
  type RuleModel,
  type UpstreamModel,
} from './model.js';

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
  jwtFrom: 'header:authorization',
  status: 429,
} as const;

/** The file (already valid against the schema) with every default written out. */
export function normalizePolicy(file: PolicyFile): Policy {
  const defaults = {
    failure: file.defaults?.failure ?? policyDefaults.failure,
    headers: file.defaults?.headers ?? policyDefaults.headers,
    mode: file.defaults?.mode ?? policyDefaults.mode,
  };
  const clients = file.clients ?? {};
  const upstreams: UpstreamModel[] =
    file.upstream !== undefined
      ? [{ name: 'upstream', url: file.upstream, host: undefined, pathPrefix: '/' }]
      : (file.upstreams ?? []).map((route) => ({
          name: route.name,
          url: route.url,
          host: route.host === undefined ? undefined : normalizeHost(route.host),
          pathPrefix: route.pathPrefix ?? '/',
        }));
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
      jwt:
        clients.jwt === undefined
          ? undefined
          : { from: clients.jwt.from ?? policyDefaults.jwtFrom, verify: clients.jwt.verify },
    },
    defaults,
    tokens: file.auth?.tokens ?? [],
    hosts: file.hosts ?? [],
    upstream: file.upstream,
    upstreams,
    server: {
      // With an upstream every path of the main listener is the application's: the server's own
      // paths move to a listener of their own unless the file keeps them on the main one.
      admin:
        file.server?.admin === 'main' || (file.server?.admin === undefined && upstreams.length === 0)
          ? 'main'
          : {
              port: file.server?.admin?.port ?? DEFAULT_ADMIN_PORT,
              host: file.server?.admin?.host,
            },
      tls: file.server?.tls,
    },
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
    allow: file.allow ?? [],
    deny: file.deny ?? [],
    rules: file.rules.map((rule) => normalizeRule(rule, defaults)),
  };
}

function normalizeRule(rule: RuleFile, defaults: Policy['defaults']): RuleModel {
  const concurrent = isConcurrencyFile(rule);
  const listed: readonly LimitFile[] = 'limits' in rule ? rule.limits : concurrent ? [] : [inlineLimit(rule)];
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
    response: { status: policyDefaults.status, ...rule.response },
    maxWait: rule.maxWait,
    limits: listed.map((limit, i) => normalizeLimit(limit, limitName(rule.name, limit.name, i))),
    ...(concurrent ? { concurrency: concurrencyModel(rule.name, rule) } : {}),
  };
}

/** The limit options written in a rule itself: its algorithm and that algorithm's options. */
function inlineLimit(rule: RuleFile): LimitOptionsFile {
  const written = rule as unknown as Record<string, unknown> & Pick<LimitOptionsFile, 'algorithm'>;
  const limit: Record<string, unknown> = {};
  for (const key of ['algorithm', ...ruleEntry(written.algorithm).optionKeys])
    if (written[key] !== undefined) limit[key] = written[key];
  return limit as unknown as LimitOptionsFile;
}

function normalizeLimit(limit: LimitFile, name: string): LimitModel {
  const { name: _own, ...options } = limit;
  const { algorithm, ...given } = options;
  // The algorithm's defaults written out (a token bucket's burst is its limit, a quota's per a day).
  const filled = ruleEntry(algorithm).withDefaults(given);
  return { name, algorithm, ...filled } as LimitModel;
}

/** A limit's name: its own, else the rule's for the first and `rule:2`, `rule:3` … after. */
export function limitName(rule: string, own: string | undefined, index: number): string {
  return own ?? (index === 0 ? rule : `${rule}:${index + 1}`);
}
