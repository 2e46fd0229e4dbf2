/**
 * A policy as the server uses it: the file with every default filled in, so that nothing
 * downstream guesses. `sluice check` prints this form.
 */
import type { HeaderStyle } from '../../http/headers.js';
import type {
  AlgorithmName,
  EnvoyDomainFile,
  BlockFile,
  FailureName,
  LimitOptionsFile,
  MatchFile,
  ModeName,
  ProxyHeaderName,
  ScopeName,
  StoreFile,
  JwtVerifyFile,
  ResponseFile,
} from './file-types.js';
import type { ConcurrencyModel } from './concurrency.js';

export type { AlgorithmName, BlockFile, FailureName, ModeName, ScopeName, StoreFile };

/** One limit of a rule, named (the rule's name for the first, then `:2`, `:3` …). */
export type LimitModel = LimitOptionsFile & { name: string };

export interface RuleModel {
  readonly name: string;
  readonly match: MatchFile;
  /** Key parts, `['address']` unless the file says otherwise. */
  readonly key: readonly string[];
  readonly cost: number;
  readonly failure: FailureName;
  readonly headers: HeaderStyle;
  readonly mode: ModeName;
  readonly allow: readonly string[];
  readonly deny: readonly string[];
  /** How a request over the limit is answered: status 429 and the library's problem body unless the file says otherwise. */
  readonly response: ResponseFile;
  /** With `mode: delay`, the longest a request waits for its slot; undefined otherwise. */
  readonly maxWait: string | undefined;
  /** One limit, or several charged all or nothing; none for a concurrency rule. */
  readonly limits: readonly LimitModel[];
  /**
   * A concurrency rule's limit (`algorithm: concurrency`): the most requests of a key in flight,
   * each holding a slot until its response ends. Undefined for a rule of rate limits.
   */
  readonly concurrency?: ConcurrencyModel;
}

export interface ClientsModel {
  readonly trustedProxies: readonly string[];
  readonly proxyHeader: ProxyHeaderName;
  readonly ipv6Prefix: number;
  /** Current secret first, then the previous ones; empty when keys are stored as they are. */
  readonly secrets: readonly string[];
  /** Where `jwt:<claim>` key parts read a token and how it is checked; undefined: no JWT parts. */
  readonly jwt: JwtModel | undefined;
}

/** `clients.jwt` with its default written out. */
export interface JwtModel {
  readonly from: string;
  readonly verify: false | JwtVerifyFile;
}

export interface TokenModel {
  readonly token: string;
  readonly scopes: readonly ScopeName[];
}

/** Envoy's rate limit service, defaults filled in. */
export interface EnvoyModel {
  /** undefined: the command line's, else 8081. */
  readonly grpcPort: number | undefined;
  /** The global shadow switch: an OVER_LIMIT overall code is answered OK, statuses unchanged. */
  readonly shadowMode: boolean;
  readonly headers: HeaderStyle;
  readonly dynamicMetadata: boolean;
  /** As written: file or directory names (relative to the policy file), or domains. */
  readonly domains: readonly (string | EnvoyDomainFile)[];
}

/** One route of the gateway, defaults filled in. */
export interface UpstreamModel {
  readonly name: string;
  readonly url: string;
  /** The host in the rules' one spelling; undefined for any host. */
  readonly host: string | undefined;
  /** As written; `/` when the file gives none. */
  readonly pathPrefix: string;
}

/** The default port of the admin listener when it has one of its own. */
export const DEFAULT_ADMIN_PORT = 8412;

/** Where the server listens besides the command line's host and port. */
export interface ServerModel {
  /**
   * `main`: the server's own paths on the main listener; else a listener of their own (its host
   * undefined: the main listener's).
   */
  readonly admin: 'main' | { readonly port: number; readonly host: string | undefined };
  /** The main listener's certificate and key files, as written (relative to the policy file). */
  readonly tls: { readonly cert: string; readonly key: string } | undefined;
}

export interface Policy {
  readonly version: 1;
  readonly store: StoreFile;
  readonly clients: ClientsModel;
  readonly defaults: {
    readonly failure: FailureName;
    readonly headers: HeaderStyle;
    readonly mode: ModeName;
  };
  /** Bearer tokens; empty when the file has no `auth` (the server then serves loopback only). */
  readonly tokens: readonly TokenModel[];
  /**
   * Host names the server answers without tokens besides loopback (a page elsewhere could
   * otherwise point its own name at this machine); empty by default.
   */
  readonly hosts: readonly string[];
  /** Gateway mode's upstream URL as written (one route); undefined otherwise. */
  readonly upstream: string | undefined;
  /** The gateway's routes (`upstream` as one route); empty when the server answers decisions only. */
  readonly upstreams: readonly UpstreamModel[];
  readonly server: ServerModel;
  /** Envoy's rate limit service; undefined when the file has no `envoy`. */
  readonly envoy: EnvoyModel | undefined;
  /** Clients every rule lets by, and those every rule refuses (403), besides the rule's own. */
  readonly allow: readonly string[];
  readonly deny: readonly string[];
  readonly rules: readonly RuleModel[];
}

/** Where a rule's parts were written, as paths into the file, for errors found after loading. */
export interface RuleOrigin {
  /** The rule itself: `['rules', 2]`. */
  readonly rule: readonly (string | number)[];
  /** Each limit: the rule for a limit written in it, else `['rules', 2, 'limits', i]`. */
  readonly limits: readonly (readonly (string | number)[])[];
}

export type { BlockFile as BlockModel };
