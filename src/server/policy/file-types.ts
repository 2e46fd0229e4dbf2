/**
 * The policy file as written, in the shape `sluice.schema.json` accepts. The field lists below
 * are checked by the compiler against these types (every field, no other) and by a test against
 * the schema, so that the types, the schema and the loader cannot drift apart. An algorithm's
 * limit is its rule's options as the rule registry (src/core/rules/index.ts) lists them, so a
 * new rule needs nothing here.
 */
import { ruleEntries, ruleKinds, type RuleKind, type RuleOptionsOf } from '../../core/rules/index.js';
import type { HeaderStyle } from '../../http/headers.js';
import { CONCURRENCY, concurrencyFields, type ConcurrencyFile } from './concurrency.js';

export type { ConcurrencyFile } from './concurrency.js';

export type FailureName = 'closed' | 'open';
/** `delay` enforces too, but a request over the limit waits for its slot (up to `maxWait`) instead of a 429. */
export type ModeName = 'enforce' | 'shadow' | 'delay';
export type ScopeName = 'decide' | 'admin';
export type ProxyHeaderName = 'x-forwarded-for' | 'x-real-ip' | 'forwarded';
/**
 * The names a list of addresses may hold for a whole range, the library's and Express's:
 * `loopback` (this machine), `linklocal` (169.254.0.0/16, fe80::/10) and `uniquelocal`
 * (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7: private networks).
 */
export type ProxyRangeName = 'loopback' | 'linklocal' | 'uniquelocal';

export interface BlockFile {
  duration: string;
  factor?: number;
  max?: string;
  forgetAfter?: string;
}

/** The policy file's name of an algorithm: the kind of the rule it makes. */
export type AlgorithmName = RuleKind;

/** A limit of the algorithm `K` as written: its name, then its factory's options. */
export type AlgorithmFile<K extends AlgorithmName> = { algorithm: K } & RuleOptionsOf<K>;

/** One limit's options, as written in a rule or in its `limits` list. */
export type LimitOptionsFile = { [K in AlgorithmName]: AlgorithmFile<K> }[AlgorithmName];

/** An entry of a rule's `limits` list: a limit with an optional name of its own. */
export type LimitFile = LimitOptionsFile & { name?: string };

export interface MatchFile {
  methods?: string[];
  paths?: string[];
  exceptPaths?: string[];
  host?: string;
  /** A value, `"*"` for any value, or {@link HeaderAbsentFile} for a header the request lacks. */
  headers?: Record<string, string | HeaderAbsentFile>;
  sourceCidrs?: string[];
}

/** A header a request must not carry, in a rule's `match.headers`. */
export interface HeaderAbsentFile {
  absent: true;
}

export interface RuleCommonFile {
  name: string;
  match?: MatchFile;
  key?: string[];
  cost?: number;
  failure?: FailureName;
  headers?: HeaderStyle;
  mode?: ModeName;
  allow?: string[];
  deny?: string[];
  response?: ResponseFile;
  /** With `mode: delay`: the longest a request waits for its slot. */
  maxWait?: string;
}

/** How a rule answers a request over its limit: the status, and the problem body's wording or a body of its own. */
export interface ResponseFile {
  status?: 429 | 503 | 403;
  problem?: ProblemFile;
  contentType?: string;
  body?: string;
}

/** The wording of the problem body (RFC 9457) of a refusal, as the library's `problem` option. */
export interface ProblemFile {
  type?: string;
  title?: string;
  detail?: string;
}

/** A rule: its one limit written in it, a `limits` list, or a concurrency limit (a rule of its own). */
export type RuleFile = RuleCommonFile & (LimitOptionsFile | { limits: LimitFile[] } | ConcurrencyFile);

export type StoreFile =
  | { type: 'memory' }
  | { type: 'redis'; url: string; timeout?: string; prefix?: string }
  | { type: 'postgres'; url: string; timeout?: string; schema?: string };

export interface ClientsFile {
  /** Addresses and CIDR ranges of your own proxies, and the named ranges ({@link ProxyRangeName}). */
  trustedProxies?: string[];
  proxyHeader?: ProxyHeaderName;
  ipv6Prefix?: number;
  pseudonymSecret?: string;
  previousSecrets?: string[];
  jwt?: JwtFile;
}

/** Where `jwt:<claim>` key parts find a token, and how it is checked. */
export interface JwtFile {
  /** `header:<name>` (a `Bearer ` scheme read off) or `cookie:<name>`. */
  from?: string;
  /** How the token is checked; `false` reads the claims as the client wrote them. */
  verify: false | JwtVerifyFile;
}

/** A verified token: HS256 with a shared `secret`, RS256 or ES256 with a PEM `publicKeyFile`. */
export interface JwtVerifyFile {
  algorithm: JwtAlgorithmName;
  secret?: string;
  publicKeyFile?: string;
}

export type JwtAlgorithmName = 'HS256' | 'RS256' | 'ES256';

export interface DefaultsFile {
  failure?: FailureName;
  headers?: HeaderStyle;
  mode?: ModeName;
}

export interface TokenFile {
  token: string;
  scopes: ScopeName[];
}

export interface AuthFile {
  tokens: TokenFile[];
}

/** A limit of envoyproxy/ratelimit's format, with its own field names. */
export interface EnvoyRateLimitFile {
  unit?: string;
  requests_per_unit?: number;
  unlimited?: boolean;
  name?: string;
  replaces?: { name?: string }[];
}

/** A descriptor level of envoyproxy/ratelimit's format. */
export interface EnvoyDescriptorFile {
  key: string;
  value?: string;
  rate_limit?: EnvoyRateLimitFile;
  descriptors?: EnvoyDescriptorFile[];
  shadow_mode?: boolean;
  quota_mode?: boolean;
  detailed_metric?: boolean;
  value_to_metric?: boolean;
  share_threshold?: boolean;
  metadata?: Record<string, unknown>;
  /** sluice's own options: a token bucket instead of the fixed window. */
  sluice?: { algorithm?: 'fixed-window' | 'token-bucket'; burst?: number };
}

/** A domain of envoyproxy/ratelimit's format, written in the policy file. */
export interface EnvoyDomainFile {
  domain: string;
  descriptors?: EnvoyDescriptorFile[];
}

/** Envoy's rate limit service: its domains (files, directories or written here) and settings. */
export interface EnvoyFile {
  grpcPort?: number;
  shadowMode?: boolean;
  headers?: HeaderStyle;
  dynamicMetadata?: boolean;
  domains: (string | EnvoyDomainFile)[];
}

/** The admin listener: the server's own API, health, metrics and dashboard on a port of their own. */
export interface AdminFile {
  port: number;
  host?: string;
}

/** The certificate and key files of a TLS listener (PEM), relative to the policy file. */
export interface TlsFile {
  cert: string;
  key: string;
}

/** Where the server listens: its admin listener, and TLS on the main listener. */
export interface ServerFile {
  /** `main`: the server's own paths on the main listener; else a listener of their own. */
  admin?: AdminFile | 'main';
  tls?: TlsFile;
}

/** One route of a gateway that routes: requests of its host and under its path prefix go to `url`. */
export interface UpstreamRouteFile {
  name: string;
  url: string;
  host?: string;
  pathPrefix?: string;
}

export interface PolicyFile {
  version: 1;
  store?: StoreFile;
  clients?: ClientsFile;
  defaults?: DefaultsFile;
  auth?: AuthFile;
  /** Host names answered without tokens besides loopback. */
  hosts?: string[];
  /** Gateway mode: where admitted requests are forwarded. */
  upstream?: string;
  /** Gateway mode with several upstreams, chosen by host and path prefix. */
  upstreams?: UpstreamRouteFile[];
  /** The listeners: admin and TLS. */
  server?: ServerFile;
  /** Envoy's rate limit service over gRPC. */
  envoy?: EnvoyFile;
  /** Address lists of the whole policy: every rule reads them before its own. */
  allow?: string[];
  deny?: string[];
  rules: RuleFile[];
}

type Fields<T> = { readonly [K in keyof Required<T>]: true };
type StoreFields<T extends StoreFile['type']> = Fields<Extract<StoreFile, { type: T }>>;

/**
 * Every field of every object in the file, by the schema's name for it (`$defs`): the compiler
 * checks each list against its type, a test checks it against `sluice.schema.json`.
 */
export const fileFields = {
  policy: {
    version: true,
    store: true,
    clients: true,
    defaults: true,
    auth: true,
    hosts: true,
    upstream: true,
    upstreams: true,
    server: true,
    envoy: true,
    allow: true,
    deny: true,
    rules: true,
  },
  server: { admin: true, tls: true },
  admin: { port: true, host: true },
  tls: { cert: true, key: true },
  upstreamRoute: { name: true, url: true, host: true, pathPrefix: true },
  envoy: { grpcPort: true, shadowMode: true, headers: true, dynamicMetadata: true, domains: true },
  envoyDomain: { domain: true, descriptors: true },
  envoyDescriptor: {
    key: true,
    value: true,
    rate_limit: true,
    descriptors: true,
    shadow_mode: true,
    quota_mode: true,
    detailed_metric: true,
    value_to_metric: true,
    share_threshold: true,
    metadata: true,
    sluice: true,
  },
  envoyRateLimit: { unit: true, requests_per_unit: true, unlimited: true, name: true, replaces: true },
  block: { duration: true, factor: true, max: true, forgetAfter: true },
  concurrency: concurrencyFields,
  match: { methods: true, paths: true, exceptPaths: true, host: true, headers: true, sourceCidrs: true },
  headerAbsent: { absent: true },
  ruleCommon: {
    name: true,
    match: true,
    key: true,
    cost: true,
    failure: true,
    headers: true,
    mode: true,
    allow: true,
    deny: true,
    response: true,
    maxWait: true,
  },
  response: { status: true, problem: true, contentType: true, body: true },
  problem: { type: true, title: true, detail: true },
  memoryStore: { type: true },
  redisStore: { type: true, url: true, timeout: true, prefix: true },
  postgresStore: { type: true, url: true, timeout: true, schema: true },
  clients: {
    trustedProxies: true,
    proxyHeader: true,
    ipv6Prefix: true,
    pseudonymSecret: true,
    previousSecrets: true,
    jwt: true,
  },
  jwt: { from: true, verify: true },
  jwtVerify: { algorithm: true, secret: true, publicKeyFile: true },
  defaults: { failure: true, headers: true, mode: true },
  auth: { tokens: true },
  token: { token: true, scopes: true },
} as const satisfies {
  policy: Fields<PolicyFile>;
  server: Fields<ServerFile>;
  admin: Fields<AdminFile>;
  tls: Fields<TlsFile>;
  upstreamRoute: Fields<UpstreamRouteFile>;
  envoy: Fields<EnvoyFile>;
  envoyDomain: Fields<EnvoyDomainFile>;
  envoyDescriptor: Fields<EnvoyDescriptorFile>;
  envoyRateLimit: Fields<EnvoyRateLimitFile>;
  block: Fields<BlockFile>;
  concurrency: Fields<ConcurrencyFile>;
  match: Fields<MatchFile>;
  headerAbsent: Fields<HeaderAbsentFile>;
  ruleCommon: Fields<RuleCommonFile>;
  response: Fields<ResponseFile>;
  problem: Fields<ProblemFile>;
  memoryStore: StoreFields<'memory'>;
  redisStore: StoreFields<'redis'>;
  postgresStore: StoreFields<'postgres'>;
  clients: Fields<ClientsFile>;
  jwt: Fields<JwtFile>;
  jwtVerify: Fields<JwtVerifyFile>;
  defaults: Fields<DefaultsFile>;
  auth: Fields<AuthFile>;
  token: Fields<TokenFile>;
};

/** The values the file's enumerations accept, checked against the schema by a test. */
export const fileChoices = {
  algorithm: ruleKinds,
  /** A rule's own `algorithm`: a rate algorithm, or a concurrency limit (never in a `limits` list). */
  ruleAlgorithm: [...ruleKinds, CONCURRENCY],
  failure: ['closed', 'open'],
  mode: ['enforce', 'shadow', 'delay'],
  scope: ['decide', 'admin'],
  proxyHeader: ['x-forwarded-for', 'x-real-ip', 'forwarded'],
  proxyRange: ['loopback', 'linklocal', 'uniquelocal'],
  storeType: ['memory', 'redis', 'postgres'],
  jwtAlgorithm: ['HS256', 'RS256', 'ES256'],
} as const satisfies {
  algorithm: readonly AlgorithmName[];
  ruleAlgorithm: readonly (AlgorithmName | typeof CONCURRENCY)[];
  failure: readonly FailureName[];
  mode: readonly ModeName[];
  scope: readonly ScopeName[];
  proxyHeader: readonly ProxyHeaderName[];
  proxyRange: readonly ProxyRangeName[];
  storeType: readonly StoreFile['type'][];
  jwtAlgorithm: readonly JwtAlgorithmName[];
};

/**
 * The fields of each algorithm's limit, by the schema's name for its options (`tokenBucket`, …):
 * `algorithm`, then the options the registry lists for it.
 */
export const algorithmFields: Readonly<Record<string, Readonly<Record<string, true>>>> = Object.fromEntries(
  ruleEntries.map((entry) => [
    entry.name,
    Object.fromEntries(['algorithm', ...entry.optionKeys].map((key) => [key, true])),
  ]),
);
