import { makeDecision, type Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import { admittedHeaders, limitedResponse } from '../../http/problem.js';
import type { BucketKeys } from '../policy/keys.js';
import type { EnvoyModel } from '../policy/model.js';
import type { EnvoyDomains, EnvoyRule } from './config.js';
import type { Ask, EnvoyBuckets } from './decide.js';
import type {
  HeaderMessage,
  RequestMessage,
  ResponseMessage,
  StatusMessage,
  StructMessage,
} from './messages.js';
import { toStruct } from './messages.js';
import type { EnvoyMetrics } from './metrics.js';
import { planRequest, type Plan } from './plan.js';
import { secondsUntilReset } from './units.js';

/** The configuration a call is decided by: the policy served when it arrived. */
export interface ServedEnvoy {
  readonly domains: EnvoyDomains;
  readonly settings: EnvoyModel;
  readonly keys: BucketKeys;
}

type LimitPlan = Extract<Plan, { kind: 'limit' }>;

const UNLIMITED_REMAINING = 4_294_967_295;

/**
 * ShouldRateLimit: envoyproxy/ratelimit's answers, counted on sluice's buckets. The descriptors
 * that enforce are charged all or nothing in one store call, and a refused request charges none
 * of them, so a client that backs off gets through as soon as its window allows. A `quota_mode`
 * descriptor refuses only with every other quota descriptor (the request then passes and is
 * charged to it past its limit), a `shadow_mode` one never refuses, and a debit (a descriptor's
 * own hits_addend) is charged whatever it holds.
 */
export class EnvoyService {
  constructor(
    private readonly buckets: EnvoyBuckets,
    private readonly metrics: EnvoyMetrics,
  ) {}

  async shouldRateLimit(request: RequestMessage, served: ServedEnvoy | undefined): Promise<ResponseMessage> {
    if (served === undefined || served.domains.size === 0)
      throw new SluiceError('SLUICE_CONFIG', 'no rate limit configuration loaded', { status: 503 });
    const plans = planRequest(served.domains, request);
    if (!served.domains.has(request.domain)) this.metrics.domainNotFound();
    const now = this.buckets.now();
    const decisions: (Decision | undefined)[] = new Array(plans.length);
    // A store that fails rejects with its limiter's error (503): UNAVAILABLE, for Envoy's
    // failure_mode_deny to decide.
    let over = await this.group(plans, decisions, served.keys, now);
    over = (await this.extras(plans, decisions, served.keys, now, over)) || over;
    return this.respond(request, served.settings, plans, decisions, over, now);
  }

  /**
   * The enforcing descriptors, all or nothing; true when the request is over. Two descriptors of
   * one counter are one ask of both costs (a store takes each bucket once), decided in turn as
   * upstream counts them: each occurrence sees the ones before it charged, so the first may pass
   * and the second be over (see {@link inTurn}).
   */
  private async group(
    plans: readonly Plan[],
    decisions: (Decision | undefined)[],
    keys: BucketKeys,
    now: number,
  ): Promise<boolean> {
    const asks: Ask[] = [];
    const askOf = new Map<number, number>();
    /** Each occurrence's cost with the costs of the occurrences of its counter before it. */
    const upTo = new Map<number, number>();
    const byBucket = new Map<string, number>();
    plans.forEach((plan, i) => {
      if (plan.kind !== 'limit' || plan.rule.shadow || plan.debit) return;
      const ask = askFor(plan, keys);
      const id = `${this.buckets.bucketName(ask)}|${ask.key}`;
      let j = byBucket.get(id);
      if (j === undefined) {
        byBucket.set(id, (j = asks.length));
        asks.push(ask);
      } else {
        asks[j] = { ...asks[j]!, cost: asks[j]!.cost + ask.cost };
      }
      askOf.set(i, j);
      upTo.set(i, asks[j]!.cost);
    });
    if (asks.length === 0) return false;
    // With an ask of limit 0 the others are only looked at (see EnvoyBuckets.takeAll).
    const looked = asks.some((a) => a.limit === 0 && a.cost >= 0);
    const decide = (result: readonly Decision[], charged: boolean) => {
      for (const [i, j] of askOf)
        decisions[i] = inTurn(result[j]!, asks[j]!.cost, upTo.get(i)!, (plans[i] as LimitPlan).cost, charged);
    };
    const result = await this.buckets.takeAll(asks, now);
    decide(result, !looked);
    const refusedAsks = result.flatMap((d, j) => (d.allowed ? [] : [j]));
    if (refusedAsks.length === 0) return false;
    const occurrences = [...askOf.keys()];
    const quota = occurrences.filter((i) => (plans[i] as LimitPlan).rule.quota);
    const over =
      occurrences.some((i) => !decisions[i]!.allowed && !(plans[i] as LimitPlan).rule.quota) ||
      (quota.length > 0 && quota.every((i) => !decisions[i]!.allowed));
    if (over) return true;
    // Only quota descriptors are over, and not all of them: the request passes and is charged
    // to every descriptor, those over their limit too (upstream counts every occurrence).
    const rest = asks.flatMap((a, j) => (refusedAsks.includes(j) ? [] : [a]));
    const again = rest.length === 0 ? [] : await this.buckets.takeAll(rest, now);
    if (again.some((d) => !d.allowed)) return true;
    let k = 0;
    decide(
      result.map((d, j) => (refusedAsks.includes(j) ? d : again[k++]!)),
      true,
    );
    // The forced ones were decided in turn as refused (not charged): their statuses stand.
    await Promise.all(refusedAsks.map((j) => this.buckets.charge(asks[j]!, now)));
    return false;
  }

  /**
   * Shadow descriptors (charged when the request passes, looked at otherwise) and debits
   * (charged whatever they hold); true when a debit went over its limit, as upstream says.
   */
  private async extras(
    plans: readonly Plan[],
    decisions: (Decision | undefined)[],
    keys: BucketKeys,
    now: number,
    over: boolean,
  ): Promise<boolean> {
    const work: Promise<boolean>[] = [];
    plans.forEach((plan, i) => {
      if (plan.kind !== 'limit' || !(plan.rule.shadow || plan.debit)) return;
      const ask = askFor(plan, keys);
      const look = plan.debit ? ask : over ? { ...ask, cost: 0 } : ask;
      work.push(
        this.buckets.takeAll([look], now).then(async ([decision]) => {
          decisions[i] = decision;
          if (!plan.debit || decision!.allowed) return false;
          await this.buckets.charge(ask, now);
          return !plan.rule.shadow;
        }),
      );
    });
    if (work.length === 0) return false;
    return (await Promise.all(work)).some(Boolean);
  }

  private respond(
    request: RequestMessage,
    settings: EnvoyModel,
    plans: readonly Plan[],
    decisions: readonly (Decision | undefined)[],
    over: boolean,
    now: number,
  ): ResponseMessage {
    const statuses: StatusMessage[] = [];
    const named: Decision[] = [];
    const passed: EnvoyRule[] = [];
    plans.forEach((plan, i) => {
      if (plan.kind === 'none') return statuses.push({ code: 'OK', limit_remaining: 0 });
      if (plan.kind === 'unlimited')
        return statuses.push({ code: 'OK', limit_remaining: UNLIMITED_REMAINING });
      const decision = decisions[i]!;
      const status = statusOf(plan, decision, now);
      statuses.push(status);
      this.count(request, plan, decision, over);
      if (status.code === 'OK') passed.push(plan.rule);
      if (!plan.rule.shadow) named.push({ ...decision, name: labelOf(plan.rule) });
    });
    const overall = over && !settings.shadowMode ? 'OVER_LIMIT' : 'OK';
    const response: ResponseMessage = {
      overall_code: overall,
      statuses,
      response_headers_to_add: [],
      request_headers_to_add: [],
    };
    if (overall === 'OVER_LIMIT' && named.some((d) => !d.allowed)) {
      const reply = limitedResponse(named, { headers: settings.headers });
      response.response_headers_to_add = headerList(reply.headers);
      response.raw_body = Buffer.from(reply.body);
    } else if (named.length > 0 && settings.headers !== 'none') {
      response.response_headers_to_add = headerList(admittedHeaders(named, settings.headers));
    }
    if (settings.dynamicMetadata) response.dynamic_metadata = metadataOf(request, passed);
    return response;
  }

  private count(request: RequestMessage, plan: LimitPlan, decision: Decision, over: boolean): void {
    const { rule } = plan;
    const outcome = !decision.allowed
      ? rule.shadow
        ? 'shadow_mode'
        : 'over_limit'
      : over
        ? undefined
        : 'within_limit';
    if (outcome !== undefined) this.metrics.hit(request.domain, rule, outcome, plan.cost);
    if (plan.detailed) this.metrics.values(request.domain, rule, plan.counter, plan.cost);
  }
}

/**
 * One occurrence of a counter decided in turn, from the decision on all its occurrences at once
 * (`total` their costs, `upTo` this one's with those before it). The bucket held `remaining +
 * total` before a charged take, `remaining` before one refused or only looked at; an occurrence
 * passes when what came before it and its own cost fit in that, and reports what would be left
 * after it. The store decided the bucket; this only says which occurrence went over, as
 * upstream's counter, incremented once per occurrence, does.
 */
function inTurn(decision: Decision, total: number, upTo: number, cost: number, charged: boolean): Decision {
  if (cost === total) return decision; // the counter's only occurrence
  const held = decision.allowed && charged ? decision.remaining + total : decision.remaining;
  const { name, limit, capacity, resetMs, windowMs } = decision;
  // Never false for a take that was charged (every occurrence fits in what it charged), so an
  // admitted call has no occurrence over. A check (cost 0) beside a hit of its own counter
  // passes when the occurrences before it fit, as upstream's check of a count not above its limit.
  if (upTo <= held)
    return decision.allowed
      ? { ...decision, remaining: held - upTo, cost }
      : makeDecision({
          allowed: true,
          name,
          limit,
          capacity,
          remaining: held - upTo,
          cost,
          retryAfterMs: 0,
          resetMs,
          windowMs,
        });
  if (!decision.allowed) return decision;
  // Looked at only (another descriptor is at limit 0) and more than the bucket holds: over until
  // its window resets (a token bucket is full by then).
  return makeDecision({
    allowed: false,
    name,
    limit,
    capacity,
    remaining: held,
    cost,
    retryAfterMs: resetMs,
    resetMs,
    windowMs,
  });
}

function askFor(plan: LimitPlan, keys: BucketKeys): Ask {
  return {
    unit: plan.rule.unit!,
    key: keys.current(plan.counter),
    cost: plan.cost,
    limit: plan.rule.requestsPerUnit,
    burst: plan.rule.burst,
  };
}

function statusOf(plan: LimitPlan, decision: Decision, now: number): StatusMessage {
  const { rule } = plan;
  const unit = rule.unit!;
  return {
    code: decision.allowed || rule.shadow ? 'OK' : 'OVER_LIMIT',
    current_limit: { name: rule.name, requests_per_unit: rule.requestsPerUnit, unit },
    limit_remaining: decision.allowed ? Math.min(decision.remaining, UNLIMITED_REMAINING) : 0,
    // A token bucket has no window: its reset is when it is full again.
    duration_until_reset: {
      seconds: rule.burst === undefined ? secondsUntilReset(unit, now) : Math.ceil(decision.resetMs / 1000),
      nanos: 0,
    },
  };
}

/** The name a rule carries in headers and problem bodies: its own, else where it is configured. */
function labelOf(rule: EnvoyRule): string {
  return rule.name !== '' ? rule.name : rule.path;
}

function headerList(headers: Record<string, string>): HeaderMessage[] {
  return Object.entries(headers).map(([key, value]) => ({ key: key.toLowerCase(), value }));
}

/**
 * dynamic_metadata: the domain, each descriptor's keys (never its values: they may be addresses
 * or user ids, and Envoy's access logs would carry them), the request's hits_addend, and the
 * metadata of the descriptors that passed, merged in request order, the first value of a key kept.
 */
function metadataOf(request: RequestMessage, passed: readonly EnvoyRule[]): StructMessage {
  const merged: Record<string, unknown> = {};
  for (const rule of passed) if (rule.metadata !== undefined) mergeInto(merged, rule.metadata);
  const data: Record<string, unknown> = {
    domain: request.domain,
    descriptors: request.descriptors.map((d) => ({ entries: d.entries.map((e) => e.key) })),
  };
  if (request.hits_addend !== 0) data.hitsAddend = request.hits_addend;
  if (Object.keys(merged).length > 0) data.metadata = merged;
  return toStruct(data);
}

/**
 * Merges one descriptor's metadata into those of the descriptors before it, as upstream does: a
 * key already there keeps its first value, and only two structs under one key merge, key by key.
 * Envoy routes by these values, so the first descriptor that passed decides, as it would upstream.
 */
function mergeInto(target: Record<string, unknown>, source: Readonly<Record<string, unknown>>): void {
  for (const [key, value] of Object.entries(source)) {
    if (!Object.hasOwn(target, key)) target[key] = isObject(value) ? structuredClone(value) : value;
    else {
      const present = target[key];
      if (isObject(present) && isObject(value)) mergeInto(present, value);
    }
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
