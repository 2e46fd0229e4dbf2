import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, readlinkSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname, isAbsolute } from 'node:path';
import type { Clock } from '../../core/clock.js';
import { compilePolicy, type CompiledPolicy, type PolicyLimit } from '../policy/compile.js';
import { PolicyError, type PolicyIssue } from '../policy/errors.js';
import { loadPolicyText, readPolicyFile, type LoadedPolicy } from '../policy/load.js';
import type { RuleModel } from '../policy/model.js';
import { authorizer } from './auth.js';
import { AuthThrottle } from './auth-throttle.js';
import { siteGuard } from './site-guard.js';
import { errorFields, limiterLogger, logPolicyIssues, type ServerLog } from './log.js';
import type { ServerMetrics } from './metrics.js';
import type { PolicyHolder, ServedPolicy } from './server.js';
import type { OpenedStore } from './store.js';
import { limitHealth, openBreakers } from './store-health.js';

/** What made a reload happen. */
export type ReloadTrigger = 'signal' | 'file';

/**
 * How long the policy file must stay quiet (no change) before it is read again: an editor saves
 * in steps.
 */
const QUIET_MS = 100;
const FAILURE_LOG_INTERVAL_MS = 60_000;

interface Generation {
  readonly served: ServedPolicy;
  /** The file's text it was loaded from. */
  readonly text: string;
  /** Requests using it now. */
  users: number;
}

interface Retired {
  readonly generation: Generation;
  /** Its limits that the next policy carried over: left open. */
  readonly kept: ReadonlySet<PolicyLimit>;
}

/**
 * The policy a server serves, replaced as a whole by a reload: each request reads it once, so it
 * sees the old policy or the new one, never half of each. A reload that fails (the file has
 * errors, or names another store) keeps the policy served and logs every error at its line.
 *
 * A rule whose limits, failure policy and mode did not change keeps its limiters, so its buckets
 * keep their state; the others are built anew on another object of the same store (in memory
 * their buckets start afresh; on a shared store a limit of the same name finds its buckets). A
 * replaced policy's own limiters are closed once the requests using it (and any older one) end;
 * a request through the gateway that holds a concurrency rule's slot uses its policy until its
 * response closed, so the slot goes back to the limit that gave it before that limit is closed.
 */
export class LivePolicy implements PolicyHolder {
  private generation: Generation;
  private readonly retired: Retired[] = [];
  /** Failed authentications by peer, kept across reloads (a reload must not forgive guesses). */
  private readonly throttle = new AuthThrottle();
  private reloading: Promise<boolean> = Promise.resolve(true);
  private watcher: FSWatcher | undefined;
  /** Fires once the folder has been quiet for {@link QUIET_MS}. */
  private quietTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private lastFailureLog = -Infinity;
  /**
   * The hash of the last text a reload rejected: the same text again is not reloaded from a file
   * change and its errors are not logged again (a server whose log is written beside an invalid
   * policy would otherwise reject it at every line it logs).
   */
  private rejectedHash: string | undefined;
  /**
   * On the memory store, the secret keys are stored under when the policy has none: drawn once,
   * kept across reloads (a kept limiter's buckets keep their keys).
   */
  private readonly fallbackSecret: string | undefined;

  private constructor(
    private readonly options: LivePolicyOptions,
    first: { loaded: LoadedPolicy; text: string },
  ) {
    this.fallbackSecret =
      options.opened.type === 'memory' ? randomBytes(32).toString('base64url') : undefined;
    this.generation = this.build(first.loaded, first.text, undefined).generation;
    this.announce(first.loaded, false);
    options.metrics.watchHealth(() => limitHealth(this.current().compiled));
  }

  /** Builds the first policy (throws its PolicyError: the server does not start). */
  static start(options: LivePolicyOptions, loaded: LoadedPolicy, text: string): LivePolicy {
    return new LivePolicy(options, { loaded, text });
  }

  current(): ServedPolicy {
    return this.generation.served;
  }

  hold(served: ServedPolicy): () => void {
    const generation = this.generation.served === served ? this.generation : this.find(served);
    if (generation === undefined) return () => {};
    generation.users++;
    return () => {
      generation.users--;
      this.closeDrained();
    };
  }

  failed(error: unknown): void {
    // At most a line a minute, with the count since the last: an outage must not flood the log.
    this.failures++;
    const now = performance.now();
    if (now - this.lastFailureLog < FAILURE_LOG_INTERVAL_MS) return;
    this.lastFailureLog = now;
    const failures = this.failures;
    this.failures = 0;
    this.options.log.error(
      { event: 'request-error', failures, ...errorFields(error) },
      'requests failed (answered 500)',
    );
  }

  metrics(): Promise<{ contentType: string; body: string }> {
    return this.options.metrics.render();
  }

  /** Reads the file again and serves it if it is valid; true when it was applied. One at a time. */
  reload(trigger: ReloadTrigger): Promise<boolean> {
    this.reloading = this.reloading.then(() => this.reloadNow(trigger));
    return this.reloading;
  }

  /**
   * Reloads whenever the file changes. Its folder is watched (editors replace files by renaming),
   * but only changes of the file's own name, or of the link it is, are looked at: other files in
   * the folder (the server's own log) never make it read again.
   */
  watchFile(): void {
    const { config, log } = this.options;
    const names = watchedNames(config);
    try {
      this.watcher = watch(dirname(config), { persistent: false }, (_event, name) => {
        // No name given (some platforms): it may have been the file.
        if (name !== null && !names.has(String(name))) return;
        clearTimeout(this.quietTimer);
        this.quietTimer = setTimeout(() => void this.reloadIfChanged(), QUIET_MS);
      });
      this.watcher.on('error', (error) =>
        log.warn({ event: 'watch-error', ...errorFields(error) }, 'the policy file is no longer watched'),
      );
    } catch (error) {
      log.warn({ event: 'watch-error', ...errorFields(error) }, 'the policy file cannot be watched');
    }
  }

  /** Stops watching; closes every policy's limiters (call once no request runs). */
  close(): void {
    this.watcher?.close();
    clearTimeout(this.quietTimer);
    for (const { generation, kept } of this.retired.splice(0)) generation.served.compiled.close(kept);
    this.generation.served.compiled.close();
  }

  private async reloadIfChanged(): Promise<void> {
    let text: string;
    try {
      text = readFileSync(this.options.config, 'utf8');
    } catch {
      // Removed or being replaced: the rename that follows is a change of its own.
      return;
    }
    // Saved without a change, or the text a reload already rejected: nothing new to read.
    if (text === this.generation.text || textHash(text) === this.rejectedHash) return;
    await this.reload('file');
  }

  private async reloadNow(trigger: ReloadTrigger): Promise<boolean> {
    const { config, env, log, metrics } = this.options;
    let hash: string | undefined;
    try {
      const text = readPolicyFile(config);
      hash = textHash(text);
      const loaded = loadPolicyText(text, { file: config, env, envoyConfig: this.options.envoyConfig });
      const previous = this.generation.served.compiled.policy.store;
      if (JSON.stringify(loaded.policy.store) !== JSON.stringify(previous)) {
        const place = loaded.issue(
          ['store'],
          'cannot change while the server runs: restart it to use another store',
        );
        throw new PolicyError(config, [place]);
      }
      const refused = this.options.refuse?.(loaded);
      if (refused !== undefined) throw new PolicyError(config, [refused]);
      if (this.options.tokensRequired && loaded.policy.tokens.length === 0) {
        // Without tokens the server answers everyone: it listens beyond loopback only with them.
        const place = loaded.issue(
          [],
          'has no auth tokens, but the server listens beyond loopback: keep auth.tokens, or restart it on loopback',
        );
        throw new PolicyError(config, [place]);
      }
      const built = this.build(loaded, text, this.generation);
      this.retire(this.generation, built.kept);
      this.generation = built.generation;
      this.announce(loaded, true, trigger, built.kept.size);
      this.rejectedHash = undefined;
      return true;
    } catch (error) {
      metrics.rejected();
      const repeated = hash !== undefined && hash === this.rejectedHash;
      this.rejectedHash = hash;
      if (repeated) {
        // Its errors were logged when it was first rejected: one line says it is still so.
        log.warn({ event: 'reload-rejected-again', trigger }, 'reload rejected: the file is unchanged since');
        return false;
      }
      if (error instanceof PolicyError) logPolicyIssues(log, error, 'reload rejected');
      // Last: a reader that sees this line has seen every error line before it.
      log.error(
        {
          event: 'reload-rejected',
          trigger,
          issues: error instanceof PolicyError ? error.issues.length : 0,
          ...errorFields(error),
        },
        'reload rejected: the policy served stays',
      );
      return false;
    }
  }

  private build(
    loaded: LoadedPolicy,
    text: string,
    previous: Generation | undefined,
  ): { generation: Generation; kept: Set<PolicyLimit> } {
    const { opened, log, metrics } = this.options;
    const kept = new Set<PolicyLimit>();
    const before = previous?.served.compiled;
    const compiled: CompiledPolicy = compilePolicy(loaded, {
      // The first policy binds the store opened; every later one binds its new limits beside.
      store: before === undefined ? opened.store : opened.view(),
      logger: limiterLogger(log),
      onError: (error, { failures }) =>
        log.error(
          { event: 'decision-error', failures, ...errorFields(error) },
          'decisions failed (answered 500)',
        ),
      events: (rule) => metrics.channel(rule),
      ...(this.options.clock === undefined ? {} : { clock: this.options.clock }),
      ...(this.fallbackSecret === undefined ? {} : { fallbackSecret: this.fallbackSecret }),
      // A concurrency limit is kept as a rate limit is: the slots in flight stay counted (a
      // limit built anew on a memory store would start with none held).
      reuse: (rule) => {
        const old = before?.rule(rule.name);
        if (old === undefined || limitsOf(old.model) !== limitsOf(rule)) return undefined;
        for (const limiter of old.limiters) kept.add(limiter);
        if (old.concurrency !== undefined) kept.add(old.concurrency);
        return old;
      },
    });
    const served: ServedPolicy = {
      compiled,
      authorize: authorizer(loaded.policy.tokens, this.throttle),
      throttle: this.throttle,
      site: siteGuard(loaded.policy.tokens.length > 0, [
        ...loaded.policy.hosts,
        ...(this.options.allowedHosts ?? []),
      ]),
      storeType: opened.type,
      // Ready when the store answers and no limit's breaker says it is failing.
      ready: async () => (await opened.ready()) && openBreakers(compiled) === 0,
      ...(loaded.envoy === undefined ? {} : { envoy: loaded.envoy }),
    };
    return { generation: { served, text, users: 0 }, kept };
  }

  private announce(loaded: LoadedPolicy, reloaded: boolean, trigger?: ReloadTrigger, kept = 0): void {
    const { policy } = loaded;
    const hash = createHash('sha256').update(JSON.stringify(loaded.printable())).digest('hex').slice(0, 16);
    this.options.metrics.served(hash, policy.store.type, policy.rules.length, reloaded);
    if (reloaded)
      this.options.log.info(
        { event: 'reload', trigger, rules: policy.rules.length, keptLimits: kept, hash },
        'policy reloaded',
      );
  }

  private retire(generation: Generation, kept: ReadonlySet<PolicyLimit>): void {
    this.retired.push({ generation, kept });
    this.closeDrained();
  }

  /**
   * Closes replaced policies in the order they were replaced, each once no request uses it: a
   * limiter a newer policy carried over may still be used by an older one until it drains.
   */
  private closeDrained(): void {
    while (this.retired.length > 0 && this.retired[0]!.generation.users === 0) {
      const { generation, kept } = this.retired.shift()!;
      generation.served.compiled.close(kept);
    }
  }

  private find(served: ServedPolicy): Generation | undefined {
    return this.retired.find((r) => r.generation.served === served)?.generation;
  }
}

/** What {@link LivePolicy} needs. */
export interface LivePolicyOptions {
  config: string;
  env: Readonly<Record<string, string | undefined>> | undefined;
  opened: OpenedStore;
  log: ServerLog;
  metrics: ServerMetrics;
  /** True when the server's own API listens beyond loopback: a policy without tokens is then refused. */
  tokensRequired: boolean;
  /** Why a reloaded policy cannot be served by this server (it would move a listener), if it cannot. */
  refuse?: (loaded: LoadedPolicy) => PolicyIssue | undefined;
  /** A directory of envoyproxy/ratelimit files (`--envoy-config`), read again at each reload. */
  envoyConfig?: string;
  /** The clock of the policy's limiters (a test's). @default Date.now */
  clock?: Clock;
  /** Host names answered without tokens besides loopback and the policy's `hosts` (`--allowed-host`). */
  allowedHosts?: readonly string[];
}

/** What a rule's limiters are made of: equal, they can be kept as they are. */
function limitsOf(rule: RuleModel): string {
  return JSON.stringify({
    limits: rule.limits,
    concurrency: rule.concurrency,
    failure: rule.failure,
    mode: rule.mode,
  });
}

/** A short hash of a policy file's text, to know it again. */
function textHash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * The names in the policy file's folder whose change may change the file: its own, and when it
 * is a link into the same folder (a Kubernetes ConfigMap: `sluice.yaml -> ..data/sluice.yaml`,
 * where `..data` is a link swapped by renaming), the first name of the link's target.
 */
function watchedNames(config: string): Set<string> {
  const names = new Set([basename(config)]);
  try {
    const target = readlinkSync(config);
    if (!isAbsolute(target)) names.add(target.split(/[\\/]/)[0]!);
  } catch {
    // Not a link: its own name is all.
  }
  return names;
}
