import type { PolicyFile, RuleFile } from './file-types.js';
import { CONCURRENCY } from './concurrency.js';
import type { Policy, RuleModel } from './model.js';

/**
 * A normalized policy written back as a policy file, every default spelt out: what `sluice check`
 * prints, so that its output loads again (with the same environment) into the same model. The
 * model's own spellings go back to the file's (`tokens` under `auth`, the secrets under
 * `clients`, each rule's limits as a `limits` list); every other part of the model is the file's
 * shape already and is written as it is.
 */
export function policyFileOf(policy: Policy): PolicyFile {
  const { clients, tokens, rules, envoy, upstream, upstreams, server, ...rest } = policy;
  const [pseudonymSecret, ...previousSecrets] = clients.secrets;
  return {
    ...rest,
    clients: {
      trustedProxies: [...clients.trustedProxies],
      proxyHeader: clients.proxyHeader,
      ipv6Prefix: clients.ipv6Prefix,
      ...(pseudonymSecret === undefined ? {} : { pseudonymSecret, previousSecrets }),
      ...(clients.jwt === undefined ? {} : { jwt: clients.jwt }),
    },
    ...(tokens.length === 0
      ? {}
      : { auth: { tokens: tokens.map((t) => ({ ...t, scopes: [...t.scopes] })) } }),
    ...(envoy === undefined ? {} : { envoy: definedOnly({ ...envoy, domains: [...envoy.domains] }) }),
    // The model holds the one `upstream` of the file as a route too: the file says one or the other.
    ...(upstream !== undefined
      ? { upstream }
      : upstreams.length === 0
        ? {}
        : { upstreams: upstreams.map((route) => definedOnly({ ...route })) }),
    server: definedOnly({
      admin: server.admin === 'main' ? server.admin : definedOnly({ ...server.admin }),
      tls: server.tls,
    }),
    rules: rules.map(ruleFileOf),
  } as PolicyFile;
}

/** A rule as written: a concurrency rule's limit in the rule itself (it is never in a list). */
function ruleFileOf(rule: RuleModel): RuleFile {
  const { concurrency, limits, ...common } = rule;
  const written = { ...common, key: [...rule.key] };
  if (concurrency === undefined) return { ...written, limits } as unknown as RuleFile;
  const { name: _name, ...options } = concurrency;
  return { ...written, algorithm: CONCURRENCY, ...options } as unknown as RuleFile;
}

function definedOnly<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
