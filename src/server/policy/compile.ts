import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Clock } from '../../core/clock.js';
import type { Duration } from '../../core/duration.js';
import { ruleEntries, ruleEntry } from '../../core/rules/index.js';
import type { Rule } from '../../core/rules/rule.js';
import { AddressList } from '../../http/address-list.js';
import { createGuard, type Guard } from '../../http/guard.js';
import { createCascade } from '../../limiter/cascade.js';
import { concurrencyLimit, type ConcurrencyLimiter } from '../../limiter/concurrency.js';
import type { Logger } from '../../limiter/failure.js';
import type { DecisionEvents } from '../../limiter/events.js';
import { createLimiter, type Limiter } from '../../limiter/limiter.js';
import type { LeaseStore } from '../../stores/contract/lease-store.js';
import type { Store } from '../../stores/contract/store.js';
import { PolicyError, type PolicyIssue } from './errors.js';
import { bucketKeys, compileKey, cookieOf, type BucketKeys } from './keys.js';
import { jwtCheckOf, jwtReader, type JwtCheck, type JwtClaims } from './jwt.js';
import { responseProblem, withResponse } from './response.js';
import type { LoadedPolicy } from './load.js';
import { compileMatch } from './match.js';
import type { LimitModel, Policy, RuleModel, RuleOrigin } from './model.js';
import { keyedRequest, requestReader, type DecisionRequest, type RequestInput } from './request.js';

type Path = readonly (string | number)[];

/** A limit a policy builds and closes: a rate limiter, or a concurrency rule's limit. */
export type PolicyLimit = Limiter | ConcurrencyLimiter;

/** What a rule's limits are built as: its rate limiters, and a concurrency rule's limit. */
export interface RuleLimits {
  /** In the file's order; several are charged all or nothing. None for a concurrency rule. */
  readonly limiters: readonly Limiter[];
  /** A concurrency rule's limit; undefined for a rule of rate limits. */
  readonly concurrency: ConcurrencyLimiter | undefined;
}

/** A rule made of the library's parts: its limiters, and the guard that decides with them. */
export interface CompiledRule extends RuleLimits {
  readonly name: string;
  readonly model: RuleModel;
  /** Decides for a request: lists, key, limits, headers and problem responses, all the library's. */
  readonly guard: Guard<DecisionRequest>;
  matches(request: DecisionRequest): boolean;
  /** The text of the request's key, before pseudonymization. */
  keyText(request: DecisionRequest): string;
  /**
   * What the rule's address lists say of a client, as its guard decides them (deny first):
   * `'denied'`, `'allowed'`, or undefined when neither lists it (or the rule has no lists). For
   * answers that do not run the guard, such as a peek.
   */
  listed(address: string | undefined): 'denied' | 'allowed' | undefined;
}

/**
 * A policy ready to decide: every rule built once. The server holds one at a time and may swap
 * it for another as a whole (a reload builds a new one beside it).
 */
export interface CompiledPolicy {
  readonly policy: Policy;
  readonly store: Store;
  /** In the file's order. */
  readonly rules: readonly CompiledRule[];
  rule(name: string): CompiledRule | undefined;
  /** The rules a request matches, in order. */
  matching(request: DecisionRequest): CompiledRule[];
  /** A caller's request as the rules see it (client address behind the trusted proxies). */
  read(input: RequestInput): DecisionRequest;
  /** A caller-built key as a request: its bucket key under the current secret. */
  keyed(key: string, cost?: number): DecisionRequest;
  readonly keys: BucketKeys;
  /**
   * Closes every limit (the store stays open: it is the caller's), but those in `kept`: the
   * limits a reloaded policy carried over.
   */
  close(kept?: ReadonlySet<PolicyLimit>): void;
}

/** Options of {@link compilePolicy}. */
export interface CompileOptions {
  /** Where the buckets live (opened from `policy.store` by the caller, or a stand-in to check). */
  store: Store;
  /** The limiters' clock. @default Date.now */
  clock?: Clock;
  /** Where the limiters log store failures. @default console */
  logger?: Logger;
  /**
   * Where the guards report errors that became a 500 (at most once a minute per rule, with the
   * number of failures since). @default console.error
   */
  onError?: (error: unknown, details: { failures: number }) => void;
  /** The channel a rule's limiters and guard report their decisions to (for metrics). */
  events?: (rule: string) => DecisionEvents;
  /**
   * The limiters to use for a rule instead of building new ones: a reload passes those of an
   * unchanged rule of the previous policy, so that its buckets keep their state.
   */
  reuse?: (rule: RuleModel) => RuleLimits | undefined;
  /**
   * The secret keys are stored as HMACs under when the policy names none: a server on the memory
   * store draws one when it starts, so that its buckets never hold an address or a header value
   * as text (they never outlive the process, so no one needs to know it). Ignored when the
   * policy has a `pseudonymSecret`.
   */
  fallbackSecret?: string;
}

/**
 * Builds a loaded policy with the library: each limit with its algorithm's function and
 * `createLimiter`, several limits of a rule with an all-or-nothing `createCascade`, the rule with
 * `createGuard`. Any option the library refuses is reported at the line it was written on, with
 * every other problem found, as one {@link PolicyError}.
 */
export function compilePolicy(loaded: LoadedPolicy, options: CompileOptions): CompiledPolicy {
  const { policy } = loaded;
  const issues: PolicyIssue[] = [];
  const built: PolicyLimit[] = [];
  /** Of those, the ones built here (not reused): a policy that fails to build closes only these. */
  const created: PolicyLimit[] = [];
  /** Runs one library call; a refusal becomes an issue at `path`. */
  const attempt: Attempt = (path, make, refine) => {
    try {
      return make();
    } catch (error) {
      const message = messageOf(error);
      issues.push(loaded.issue([...path, ...(refine?.(message) ?? [])], `is not accepted: ${message}`));
      return undefined;
    }
  };

  const proxiesRead = checkAddresses(
    loaded,
    ['clients', 'trustedProxies'],
    policy.clients.trustedProxies,
    issues,
  );
  const keys =
    policy.clients.secrets.length === 0 && options.fallbackSecret !== undefined
      ? bucketKeys([options.fallbackSecret])
      : (checkedSecrets(loaded, policy, issues) ?? bucketKeys([]));
  const read = proxiesRead ? attempt(['clients'], () => requestReader(policy.clients)) : undefined;
  const claims = jwtClaims(loaded, options.clock ?? Date.now, issues);
  // The policy's lists are read once here; each rule's guard reads them before its own.
  const policyListsRead = [
    checkAddresses(loaded, ['allow'], policy.allow, issues),
    checkAddresses(loaded, ['deny'], policy.deny, issues),
  ].every(Boolean);

  const rules: CompiledRule[] = [];
  policy.rules.forEach((rule, i) => {
    const origin = loaded.origins[i]!;
    const allow = [...policy.allow, ...rule.allow];
    const deny = [...policy.deny, ...rule.deny];
    const listsRead = [
      policyListsRead,
      checkAddresses(loaded, ['rules', i, 'allow'], rule.allow, issues),
      checkAddresses(loaded, ['rules', i, 'deny'], rule.deny, issues),
      checkAddresses(loaded, ['rules', i, 'match', 'sourceCidrs'], rule.match.sourceCidrs ?? [], issues),
    ].every(Boolean);
    const events = options.events?.(rule.name);
    const reused = options.reuse?.(rule);
    const limiters =
      reused === undefined ? limitersOf(rule, origin, options, events, attempt) : [...reused.limiters];
    const concurrency =
      reused === undefined ? concurrencyOf(rule, origin, options, attempt) : reused.concurrency;
    const own = concurrency === undefined ? limiters : [...limiters, concurrency];
    if (reused === undefined) created.push(...own);
    built.push(...own);
    // A rule whose parts were refused above is not built: its lists would be refused again.
    if (limiters.length !== rule.limits.length || !listsRead) return;
    if ((rule.concurrency === undefined) !== (concurrency === undefined)) return;
    const limits =
      concurrency ??
      (limiters.length === 1
        ? limiters[0]!
        : attempt(origin.rule, () => createCascade(limiters, { mode: 'all-or-nothing' })));
    if (limits === undefined) return;
    const matches = attempt(['rules', i, 'match'], () => compileMatch(rule.match, `rules[${i}].match`));
    const keyText = ruleKey(loaded, i, claims, issues);
    if (keyText === undefined) return;
    if ((rule.mode === 'delay') !== (rule.maxWait !== undefined))
      return void issues.push(
        rule.mode === 'delay'
          ? loaded.issue([...origin.rule, 'mode'], 'delay needs maxWait: the longest a request waits')
          : loaded.issue([...origin.rule, 'maxWait'], 'is read only with mode: delay'),
      );
    const answer = responseProblem(rule.response);
    if (answer !== undefined)
      return void issues.push(loaded.issue(['rules', i, 'response', answer[0]], answer[1]));
    const guard = attempt(origin.rule, () =>
      createGuard<DecisionRequest>({
        limits,
        key: (request) => request.key ?? keys.current(keyText(request)),
        cost: (request) => request.cost ?? rule.cost,
        headers: rule.headers,
        ...(rule.response.problem === undefined ? {} : { problem: rule.response.problem }),
        ...delayOptions(rule),
        address: (request) => request.address,
        ...(allow.length > 0 ? { allow: [...allow] } : {}),
        ...(deny.length > 0 ? { deny: [...deny] } : {}),
        ...(options.onError === undefined ? {} : { onError: options.onError }),
        ...(events === undefined ? {} : { events }),
      }),
    );
    if (guard === undefined || matches === undefined) return;
    rules.push({
      name: rule.name,
      model: rule,
      limiters,
      concurrency,
      guard: withResponse(guard, rule.response),
      matches,
      keyText,
      listed: listsOf(allow, deny),
    });
  });

  if (issues.length > 0 || read === undefined) {
    for (const limiter of created) limiter.close();
    throw new PolicyError(loaded.file, issues);
  }
  const byName = new Map(rules.map((r) => [r.name, r]));
  return {
    policy,
    store: options.store,
    rules,
    rule: (name) => byName.get(name),
    matching: (request) => rules.filter((r) => r.matches(request)),
    read,
    keyed: (key, cost) => keyedRequest(keys.current(key), cost),
    keys,
    close: (kept) => {
      for (const limiter of built) if (kept?.has(limiter) !== true) limiter.close();
    },
  };
}

/** The guard's delay mode for a rule of `mode: delay`, with its `maxWait`. */
function delayOptions(rule: RuleModel): { mode: 'delay'; maxWait: Duration } | object {
  return rule.mode === 'delay' ? { mode: 'delay', maxWait: rule.maxWait as Duration } : {};
}

/** Runs one library call at `path`; a refusal becomes an issue there and the answer undefined. */
type Attempt = <T>(path: Path, make: () => T, refine?: (message: string) => Path) => T | undefined;

/**
 * A concurrency rule's limit, built by the library on the policy's store (every store sluice
 * ships keeps leases; another is refused by the library); undefined for a rule of rates.
 */
function concurrencyOf(
  rule: RuleModel,
  origin: RuleOrigin,
  options: CompileOptions,
  attempt: Attempt,
): ConcurrencyLimiter | undefined {
  const model = rule.concurrency;
  if (model === undefined) return undefined;
  return attempt(origin.rule, () =>
    concurrencyLimit({
      name: model.name,
      max: model.max,
      leaseTtl: model.leaseTtl as Duration,
      store: options.store as Store & LeaseStore,
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
    }),
  );
}

/** A rule's limiters, built by the library; a limit it refuses is an issue and left out. */
function limitersOf(
  rule: RuleModel,
  origin: RuleOrigin,
  options: CompileOptions,
  events: DecisionEvents | undefined,
  attempt: Attempt,
): Limiter[] {
  const limiters: Limiter[] = [];
  rule.limits.forEach((limit, j) => {
    const algorithm = attempt(origin.limits[j]!, () => algorithmOf(limit), optionPath);
    if (algorithm === undefined) return;
    const limiter = attempt(
      origin.rule,
      () =>
        createLimiter({
          name: limit.name,
          rule: algorithm,
          store: options.store,
          failure: rule.failure,
          // A delaying rule's limiters enforce; the guard does the waiting.
          mode: rule.mode === 'shadow' ? 'shadow' : 'enforce',
          ...(options.clock === undefined ? {} : { clock: options.clock }),
          ...(options.logger === undefined ? {} : { logger: options.logger }),
          ...(events === undefined ? {} : { events }),
        }),
      // The limiter's own options (failure, mode) are written in the rule.
      (message) => /^limiter "[^"]*" (failure|mode)\b/.exec(message)?.slice(1) ?? [],
    );
    if (limiter !== undefined) limiters.push(limiter);
  });
  return limiters;
}

/**
 * The text of a rule's key for a request; undefined when a `jwt:` part has no claims to read
 * (no `clients.jwt`, an issue at the part; or a refused one, whose issue is already told).
 */
function ruleKey(
  loaded: LoadedPolicy,
  i: number,
  claims: ((request: DecisionRequest) => JwtClaims) | undefined,
  issues: PolicyIssue[],
): ((request: DecisionRequest) => string) | undefined {
  const { policy } = loaded;
  const rule = policy.rules[i]!;
  const missing = rule.key.findIndex((part) => part.startsWith('jwt:') && claims === undefined);
  if (missing < 0) return compileKey(rule.key, rule.name, { ipv6Prefix: policy.clients.ipv6Prefix, claims });
  if (policy.clients.jwt === undefined)
    issues.push(
      loaded.issue(
        ['rules', i, 'key', missing],
        'reads a JWT claim: the policy needs clients.jwt (where tokens are and how they are checked)',
      ),
    );
  return undefined;
}

/**
 * How `jwt:<claim>` key parts read a request's claims: the token from where `clients.jwt.from`
 * says, checked as `verify` says (its key read once, here); undefined without `clients.jwt`, or
 * when its check is refused (an issue at its line).
 */
function jwtClaims(
  loaded: LoadedPolicy,
  clock: Clock,
  issues: PolicyIssue[],
): ((request: DecisionRequest) => JwtClaims) | undefined {
  const jwt = loaded.policy.clients.jwt;
  if (jwt === undefined) return undefined;
  let check: JwtCheck;
  try {
    check = jwtCheckOf(jwt.verify, (file) => readFileSync(resolve(dirname(loaded.file), file), 'utf8'));
  } catch (error) {
    // "secret: must be …": the field first, then what it must be.
    const [field, what] = messageOf(error).split(': ', 2) as [string, string];
    issues.push(loaded.issue(['clients', 'jwt', 'verify', field], what));
    return undefined;
  }
  const read = jwtReader(check, clock);
  const name = jwt.from.slice(jwt.from.indexOf(':') + 1);
  if (jwt.from.startsWith('cookie:')) return (request) => read(cookieOf(request.headers.cookie, name));
  const header = name.toLowerCase();
  return (request) => read(bearerOf(request.headers[header]));
}

/** A header's token: after a `Bearer ` scheme (any case) when it has one, else the whole value. */
function bearerOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return bearerScheme.test(value) ? value.slice(7).trim() : value.trim();
}

const bearerScheme = /^bearer /i;

/**
 * A rule's allow and deny lists (the policy's and its own) as its guard reads them (`loopback`
 * included, deny first).
 */
function listsOf(allowed: readonly string[], denied: readonly string[]): CompiledRule['listed'] {
  const deny = denied.length > 0 ? new AddressList([...denied], 'deny') : undefined;
  const allow = allowed.length > 0 ? new AddressList([...allowed], 'allow') : undefined;
  return (address) => {
    if (deny?.has(address) === true) return 'denied';
    if (allow?.has(address) === true) return 'allowed';
    return undefined;
  };
}

/** A limit's algorithm, made by the library's own function (which checks every option). */
function algorithmOf(limit: LimitModel): Rule {
  const { name: _name, algorithm, ...options } = limit;
  return ruleEntry(algorithm).create(definedOnly(options));
}

/** An algorithm's error starts with its factory's name, then the option: "tokenBucket block max …". */
const optionNamed = new RegExp(`^(?:${ruleEntries.map((e) => e.name).join('|')}) ((?:block )?[A-Za-z]+)\\b`);

/**
 * The option an algorithm's error names ("tokenBucket block max must be …" → block, max), so
 * that it is reported at that option's line; a name the file does not hold falls back to the
 * limit's own line.
 */
function optionPath(message: string): Path {
  const named = optionNamed.exec(message);
  return named === null ? [] : named[1]!.split(' ');
}

/** Each entry parsed alone by the library's CIDR parser, so that an error names its line. */
function checkAddresses(
  loaded: LoadedPolicy,
  path: Path,
  entries: readonly string[],
  issues: PolicyIssue[],
): boolean {
  const before = issues.length;
  entries.forEach((entry, i) => {
    if (entry === 'loopback') return;
    try {
      new AddressList([entry], 'entry');
    } catch (error) {
      // The library says "entry[0] must be …"; the place is ours to give.
      issues.push(loaded.issue([...path, i], messageOf(error).replace(/^entry\[0\] /, '')));
    }
  });
  return issues.length === before;
}

/** Each secret checked alone (length), then together (no repeats); undefined when refused. */
function checkedSecrets(loaded: LoadedPolicy, policy: Policy, issues: PolicyIssue[]): BucketKeys | undefined {
  const { secrets } = policy.clients;
  const pathOf = (i: number): Path =>
    i === 0 ? ['clients', 'pseudonymSecret'] : ['clients', 'previousSecrets', i - 1];
  const before = issues.length;
  secrets.forEach((secret, i) => {
    try {
      bucketKeys([secret]);
    } catch (error) {
      issues.push(
        loaded.issue(pathOf(i), messageOf(error).replace(/^createPseudonymRing secrets\[0\] /, '')),
      );
    }
  });
  if (issues.length > before) return undefined;
  try {
    return bucketKeys(secrets);
  } catch (error) {
    const repeated = /secrets\[(\d+)\]/.exec(messageOf(error));
    issues.push(loaded.issue(pathOf(Number(repeated?.[1] ?? 0)), 'repeats an earlier secret'));
    return undefined;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : 'an unexpected error';
}

function definedOnly(value: object): object {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}
