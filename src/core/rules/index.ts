import type { Rule } from './rule.js';
import { anchoredWindow } from './anchored-window.js';
import { calendarQuota, type CalendarQuotaOptions } from './calendar-quota.js';
import { fixedWindow } from './fixed-window.js';
import { slidingWindow } from './sliding-window.js';
import { tokenBucket, type TokenBucketOptions } from './token-bucket.js';

/**
 * The rules sluice ships, one entry per kind: everything that is not the rule's own deciding but
 * that other parts need to know about it. The server reads a policy file's limits with it (the
 * file's `algorithm` is the kind, its other keys the factory's options), the policy schema's
 * definitions are written from it, and the docs' pictures draw one lane per entry. A new rule
 * adds its core file and one line here; the shared stores add a module of the same kind.
 */

/** A JSON Schema, as the policy file's schema (`sluice.schema.json`) is written. */
export type JsonSchema = { readonly [keyword: string]: unknown };

/** One rule kind as the rest of sluice sees it. */
export interface RuleEntry<K extends string, O extends object> {
  /** The rule's `kind`, also the policy file's `algorithm`. */
  readonly kind: K;
  /**
   * The factory's name: what its option errors start with ("tokenBucket period must be …") and
   * the name of its options' definition in the policy schema.
   */
  readonly name: string;
  /** Makes the rule, checking every option (the factory itself). */
  create(options: O): Rule;
  /** The options the factory accepts, in the order the schema lists them. */
  readonly optionKeys: readonly (keyof O & string)[];
  /** The options a policy must give. */
  readonly required: readonly (keyof O & string)[];
  /**
   * The schema of each option in the policy file. `$ref`s point at the policy schema's shared
   * definitions: `count` (a whole number from 1 to 10^12), `duration` and `block`.
   */
  readonly properties: { readonly [P in keyof Required<O>]: JsonSchema };
  /** The options with the factory's defaults written out, as `sluice check` shows a policy. */
  withDefaults(options: O): O;
  /**
   * What the limit is counted per, as the options write it (`"1m"`, `"day"`, a default filled
   * in): what the dashboard shows after "10 per".
   */
  per(options: O): string;
  /** A typical rule's options (ten a minute, or thirty a day), for pictures and tests. */
  readonly example: O;
}

type EntryDefinition<K extends string, O extends object> = Omit<
  RuleEntry<K, O>,
  'optionKeys' | 'withDefaults'
> & { withDefaults?: (options: O) => O };

function defineRule<K extends string, O extends object>(entry: EntryDefinition<K, O>): RuleEntry<K, O> {
  return {
    ...entry,
    optionKeys: Object.keys(entry.properties) as (keyof O & string)[],
    withDefaults: entry.withDefaults ?? ((options) => options),
  };
}

const count = { $ref: '#/$defs/count' };
const duration = { $ref: '#/$defs/duration' };
const block = { $ref: '#/$defs/block' };
const penalty = { type: 'boolean' };

/** The fixed, the sliding and the anchored window take the same options. */
const windowEntry = {
  required: ['limit', 'window'],
  properties: { limit: count, window: duration, penalty, block },
  example: { limit: 10, window: '1m' },
} as const;

/** Every rule kind, in the order the policy schema and the docs list them. */
export const ruleRegistry = {
  'token-bucket': defineRule({
    kind: 'token-bucket',
    name: 'tokenBucket',
    create: tokenBucket,
    required: ['limit', 'period'],
    properties: {
      limit: { description: 'Tokens earned per period.', ...count },
      period: duration,
      burst: {
        description:
          "The most tokens a bucket holds, i.e. the largest burst. Default: the limit (a period's worth may be spent at once). Traefik's default is 1, nginx's 0: write burst to match those.",
        ...count,
      },
      penalty: { description: 'A refusal is charged too.', ...penalty },
      block,
    },
    // A period's worth may be spent at once.
    withDefaults: (options: TokenBucketOptions) => ({ ...options, burst: options.burst ?? options.limit }),
    per: (options) => options.period,
    example: { limit: 10, period: '1m' },
  }),
  'fixed-window': defineRule({
    kind: 'fixed-window',
    name: 'fixedWindow',
    create: fixedWindow,
    ...windowEntry,
    per: (options) => options.window,
  }),
  'sliding-window': defineRule({
    kind: 'sliding-window',
    name: 'slidingWindow',
    create: slidingWindow,
    ...windowEntry,
    per: (options) => options.window,
  }),
  'calendar-quota': defineRule({
    kind: 'calendar-quota',
    name: 'calendarQuota',
    create: calendarQuota,
    required: ['limit'],
    properties: {
      limit: count,
      per: { description: 'Default: day.', enum: ['hour', 'day', 'week', 'month'] },
      timeZone: { description: 'An IANA time zone. Default: UTC.', type: 'string', minLength: 1 },
      weekStart: {
        description: '1 = Monday … 7 = Sunday. Default: 1.',
        type: 'integer',
        minimum: 1,
        maximum: 7,
      },
      penalty,
      block,
    },
    withDefaults: (options: CalendarQuotaOptions) => ({ per: 'day' as const, ...options }),
    per: (options) => options.per ?? 'day',
    example: { limit: 30, per: 'day' },
  }),
  'anchored-window': defineRule({
    kind: 'anchored-window',
    name: 'anchoredWindow',
    create: anchoredWindow,
    ...windowEntry,
    per: (options) => options.window,
  }),
};

/** A rule kind sluice ships. */
export type RuleKind = keyof typeof ruleRegistry;

/** The options of the rule of kind `K`, as its factory takes them. */
export type RuleOptionsOf<K extends RuleKind> = (typeof ruleRegistry)[K]['example'];

/** Every kind, in the registry's order. */
export const ruleKinds = Object.keys(ruleRegistry) as RuleKind[];

/** An entry read without its kind's own types, as code that goes through every kind reads it. */
export interface AnyRuleEntry {
  readonly kind: RuleKind;
  readonly name: string;
  create(options: object): Rule;
  readonly optionKeys: readonly string[];
  readonly required: readonly string[];
  readonly properties: Readonly<Record<string, JsonSchema>>;
  withDefaults(options: object): object;
  per(options: object): string;
  readonly example: object;
}

/** The entries, in the registry's order. */
export const ruleEntries: readonly AnyRuleEntry[] = Object.values(ruleRegistry);

/** The entry of `kind`. */
export function ruleEntry(kind: RuleKind): AnyRuleEntry {
  return ruleRegistry[kind];
}
