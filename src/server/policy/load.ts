import { readFileSync } from 'node:fs';
import type { YAMLError } from 'yaml';
import { LineCounter, parseDocument, type Document, type Scalar } from 'yaml';
import { loadEnvoyDomains } from '../envoy/load.js';
import type { EnvoyDomains } from '../envoy/config.js';
import { PolicyError, pathText, type PolicyIssue } from './errors.js';
import { concurrencyProblems } from './concurrency.js';
import { expandEnvironment, expansionOf, shieldReferences, type Expansion } from './expand.js';
import type { PolicyFile } from './file-types.js';
import { locate } from './locate.js';
import type { Policy, RuleOrigin } from './model.js';
import { limitName, normalizePolicy } from './normalize.js';
import { upstreamProblems } from './upstreams.js';
import { schemaProblems } from './validate.js';

type Path = readonly (string | number)[];

/**
 * A policy read from its file: the model, and where each part of it was written, so that
 * problems found later (by the library's own option checks) are reported at their line too.
 */
export interface LoadedPolicy {
  readonly policy: Policy;
  /** The file's name as given. */
  readonly file: string;
  /**
   * The domains of Envoy's rate limit service (the file's `envoy.domains` and `--envoy-config`),
   * built; undefined when there are none to serve.
   */
  readonly envoy: EnvoyDomains | undefined;
  /** Where each rule and each of its limits were written. */
  readonly origins: readonly RuleOrigin[];
  /** An issue at `path` of the file (its key with `atKey`), its message prefixed with the place. */
  issue(path: Path, what: string, atKey?: boolean): PolicyIssue;
  /**
   * The normalized policy to show: values read from the environment are shown as written
   * (`${NAME}`), secrets written in the file as "<hidden>".
   */
  printable(): Policy;
}

/** Options of {@link loadPolicyText}. */
export interface LoadOptions {
  /** The name errors give the file. @default "sluice.yaml" */
  file?: string;
  /** Where `${NAME}` is looked up. @default process.env */
  env?: Readonly<Record<string, string | undefined>>;
  /** A directory of envoyproxy/ratelimit configuration files (`--envoy-config`). */
  envoyConfig?: string;
}

/**
 * Reads a policy file: parse (YAML), expand `${NAME}`, validate (sluice.schema.json), check
 * what the schema cannot (unique names), normalize. Throws a {@link PolicyError} listing every
 * problem with its line and column; never anything else.
 *
 * @example
 * const { policy } = loadPolicyText('version: 1\nrules: []\n', { file: 'inline.yaml' });
 */
export function loadPolicyText(text: string, options: LoadOptions = {}): LoadedPolicy {
  const file = options.file ?? 'sluice.yaml';
  const lines = new LineCounter();
  const doc = parseDocument(shieldReferences(text), {
    lineCounter: lines,
    prettyErrors: false,
    uniqueKeys: true,
    strict: true,
  });
  const issues: PolicyIssue[] = [];
  for (const error of [...doc.errors, ...doc.warnings]) issues.push(yamlIssue(error, lines));
  if (issues.length > 0) throw new PolicyError(file, issues);

  const { expanded, problems } = expandEnvironment(doc, options.env ?? process.env);
  for (const problem of problems) {
    const { line, col } = lines.linePos(problem.node.range?.[0] ?? 0);
    issues.push({ line, column: col, path: '', message: problem.message });
  }
  if (issues.length > 0) throw new PolicyError(file, issues);

  const issue = (path: Path, what: string, atKey = false): PolicyIssue => {
    const place = locate(doc, lines, path, atKey);
    // An unknown key is said of the mapping it is in: "rules[0] has an unknown key "burts"".
    const where = pathText(atKey ? path.slice(0, -1) : path);
    const from = atKey ? undefined : expansionOf(expanded, doc.getIn(path, true));
    // A value that only wrote `$${` read no variable: there is none to name.
    const source =
      from === undefined || from.names.length === 0
        ? ''
        : ` (the value of ${from.names.map((n) => `\${${n}}`).join(', ')})`;
    return {
      ...place,
      path: pathText(path),
      message: `${where === '' ? 'the policy' : where}${source} ${what}`,
    };
  };

  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // An alias bomb, or an alias to nothing: the YAML is well-formed but unusable.
    const what =
      error instanceof Error && /alias/i.test(error.message) ? 'uses too many aliases' : 'cannot be read';
    throw new PolicyError(file, [issue([], what)]);
  }
  for (const problem of schemaProblems(data)) issues.push(issue(problem.path, problem.what, problem.atKey));
  if (issues.length > 0) throw new PolicyError(file, issues);

  const policyFile = data as PolicyFile;
  issues.push(...duplicateNames(policyFile, issue));
  issues.push(...upstreamProblems(policyFile, issue));
  const storeUrl = storeUrlProblem(policyFile.store);
  if (storeUrl !== undefined) issues.push(issue(['store', 'url'], storeUrl));
  if (issues.length > 0) throw new PolicyError(file, issues);
  const policy = normalizePolicy(policyFile);
  const concurrency = concurrencyProblems(policy, issue);
  if (concurrency.length > 0) throw new PolicyError(file, concurrency);
  const envoy =
    policyFile.envoy === undefined && options.envoyConfig === undefined
      ? undefined
      : loadEnvoyDomains({
          file,
          doc,
          lines,
          domains: policyFile.envoy?.domains,
          directory: options.envoyConfig,
          issue: (path, what) => issue(path, what),
        });
  return {
    policy,
    envoy,
    file,
    origins: policyFile.rules.map((rule, i) => ({
      rule: ['rules', i],
      limits: 'limits' in rule ? rule.limits.map((_, j) => ['rules', i, 'limits', j]) : [['rules', i]],
    })),
    issue,
    printable: () => printable(policy, expanded),
  };
}

/** Reads and loads the policy file at `path`; a file that cannot be read is a PolicyError too. */
export function loadPolicyFile(path: string, env?: LoadOptions['env'], envoyConfig?: string): LoadedPolicy {
  return loadPolicyText(readPolicyFile(path), { file: path, env, envoyConfig });
}

/** The text of the policy file at `path`; one that cannot be read is a PolicyError at its first line. */
export function readPolicyFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'there is no such file' : `the file cannot be read (${code ?? 'error'})`;
    throw new PolicyError(path, [{ line: 1, column: 1, path: '', message: why }]);
  }
}

function yamlIssue(error: YAMLError, lines: LineCounter): PolicyIssue {
  const { line, col } = error.linePos?.[0] ?? lines.linePos(error.pos[0]);
  // The first line of yaml's message, without the place (given apart) or the quoted source
  // (it may show a secret written on that line).
  const text = error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
  return { line, column: col, path: '', message: `not valid YAML: ${text}` };
}

/**
 * Rule names are unique, and so are the limits' names across all rules: a limit's name is its
 * buckets' name in the store, so two limits of one name would share buckets.
 */
function duplicateNames(policy: PolicyFile, issue: (path: Path, what: string) => PolicyIssue): PolicyIssue[] {
  const found: PolicyIssue[] = [];
  const rules = new Map<string, number>();
  const limits = new Map<string, Path>();
  policy.rules.forEach((rule, i) => {
    const earlier = rules.get(rule.name);
    if (earlier !== undefined) {
      found.push(issue(['rules', i, 'name'], `repeats the name of rules[${earlier}]: rule names are unique`));
      return;
    }
    rules.set(rule.name, i);
    const list = 'limits' in rule ? rule.limits : [{}];
    list.forEach((limit, j) => {
      const name = limitName(rule.name, (limit as { name?: string }).name, j);
      const path: Path = 'limits' in rule ? ['rules', i, 'limits', j] : ['rules', i];
      const other = limits.get(name);
      if (other !== undefined)
        found.push(
          issue(
            path,
            `names a limit ${JSON.stringify(name)} as ${pathText(other)} does: limit names are unique`,
          ),
        );
      else limits.set(name, path);
    });
  });
  return found;
}

const hidden = '<hidden>';

function printable(policy: Policy, expanded: Map<Scalar, Expansion>): Policy {
  // Each value read from the environment is shown as it was written: a secret in a URL or a
  // token never reaches the output. Empty values would stand for every empty string: skipped.
  const written = new Map<string, string>();
  for (const [node, expansion] of expanded)
    if (typeof node.value === 'string' && node.value !== '') written.set(node.value, expansion.written);
  const show = (value: string) => written.get(value) ?? value;
  const secret = (value: string) => written.get(value) ?? hidden;
  const copy = JSON.parse(
    JSON.stringify(policy, (_key, value: unknown) => (typeof value === 'string' ? show(value) : value)),
  ) as {
    clients: { secrets: string[]; jwt?: { verify: false | { secret?: string } } };
    tokens: { token: string }[];
    store: { url?: string };
  };
  copy.clients.secrets = policy.clients.secrets.map(secret);
  const jwtSecret = policy.clients.jwt?.verify === false ? undefined : policy.clients.jwt?.verify.secret;
  const jwtCopy = copy.clients.jwt?.verify;
  if (jwtSecret !== undefined && jwtCopy !== undefined && jwtCopy !== false)
    jwtCopy.secret = secret(jwtSecret);
  copy.tokens.forEach((t, i) => (t.token = secret(policy.tokens[i]!.token)));
  if (copy.store.url !== undefined) copy.store.url = withoutPassword(copy.store.url);
  return copy as unknown as Policy;
}

/**
 * A store URL with every credential replaced: the password of its user part, up to the last `@`
 * (a password may hold a `/`, `:` or `@` its writer did not percent-encode), and the query from
 * the first parameter that may carry one (`?password=`, `sslpassword`, `sslkey`, `token`…) on.
 */
export function withoutPassword(url: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url);
  // No scheme: the text as written in the file, `${NAME}`, whose value is never shown.
  if (scheme === null) return url;
  let rest = url.slice(scheme[0].length);
  const at = rest.lastIndexOf('@');
  // A `?` before the last `@`: a password holding `?`, or a query holding `@`; all is hidden.
  if (at >= 0 && rest.indexOf('?') >= 0 && rest.indexOf('?') < at) return scheme[0] + hidden;
  if (at >= 0) {
    const user = rest.slice(0, at);
    const colon = user.indexOf(':');
    rest = `${colon < 0 ? user : `${user.slice(0, colon + 1)}${hidden}`}@${rest.slice(at + 1)}`;
  }
  const query = rest.indexOf('?');
  if (query >= 0) {
    // From the first parameter that may carry a credential on, all is hidden: its value may
    // hold an `&` its writer did not percent-encode, which would look like the next parameter.
    const pairs = rest.slice(query + 1).split('&');
    const first = pairs.findIndex((pair) => credentialParameter.test(pair.split('=', 1)[0]!));
    if (first >= 0)
      rest = `${rest.slice(0, query + 1)}${[...pairs.slice(0, first), `${pairs[first]!.split('=', 1)[0]}=${hidden}`].join('&')}`;
  }
  return scheme[0] + rest;
}

/** Query parameters of a store URL that may carry a credential. */
const credentialParameter = /pass|secret|token|key|auth|cred/i;

/** The schemes each store's driver reads. */
const storeSchemes: Record<string, readonly string[]> = {
  redis: ['redis:', 'rediss:'],
  postgres: ['postgres:', 'postgresql:'],
};

/**
 * What is wrong with a shared store's URL, checked here so that a typo is a policy error naming
 * `store.url` (never its text: it may hold a password) instead of the driver's exception, which
 * quotes the whole URL.
 */
function storeUrlProblem(store: PolicyFile['store']): string | undefined {
  if (store === undefined || store.type === 'memory') return undefined;
  const schemes = storeSchemes[store.type]!;
  const expected = `must be a ${schemes.map((s) => `${s}//`).join(' or ')} URL`;
  if (/\s/.test(store.url)) return `${expected} without spaces (percent-encode them in a password)`;
  let url: URL;
  try {
    url = new URL(store.url);
  } catch {
    return `${expected} that can be read: a host, a port of at most 65535, brackets around an IPv6 address, reserved characters of a password percent-encoded`;
  }
  if (!schemes.includes(url.protocol)) return expected;
  if (store.type === 'redis' && url.hostname === '') return `${expected} with a host`;
  return undefined;
}

export type { Document };
