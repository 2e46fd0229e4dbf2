/**
 * A concurrency rule of the policy file: `algorithm: concurrency` with `max` requests of a key in
 * flight at once, the library's `concurrencyLimit`. It is not a rule of the rule registry (that
 * one lists rate algorithms, which decide on a bucket's state): a slot is held while a request
 * runs and released when its response ends, which only the gateway sees. So it is a rule of its
 * own (never an entry of a `limits` list), and only a policy with an upstream may hold one.
 */
import { MAX_LEASES } from '../../stores/contract/lease-store.js';
import type { PolicyIssue } from './errors.js';
import type { Policy } from './model.js';

/** The `algorithm` of a concurrency rule. */
export const CONCURRENCY = 'concurrency';

/** A concurrency rule's own options, as written in the rule. */
export interface ConcurrencyFile {
  algorithm: typeof CONCURRENCY;
  /** The most requests of one key in flight at once. */
  max: number;
  /** How long a slot lives when nobody releases it (a server that crashed). */
  leaseTtl?: string;
}

/** A concurrency rule's limit, defaults filled in; named as the rule. */
export interface ConcurrencyModel {
  readonly name: string;
  readonly max: number;
  readonly leaseTtl: string;
}

/**
 * A slot's life when the file gives none: longer than most requests through a gateway, short
 * enough that the slots of a server that crashed on a shared store come back soon.
 */
export const DEFAULT_LEASE_TTL = '5m';

/** The fields of a concurrency rule's options (`algorithm` included), as the schema lists them. */
export const concurrencyFields = { algorithm: true, max: true, leaseTtl: true } as const;

/** The definition of a concurrency rule's options in sluice.schema.json (`$defs.concurrency`). */
export const concurrencySchema = {
  type: 'object',
  required: ['algorithm', 'max'],
  properties: {
    algorithm: { const: CONCURRENCY },
    max: {
      description: 'The most requests of one key in flight at once (gateway mode only).',
      type: 'integer',
      minimum: 1,
      maximum: MAX_LEASES,
    },
    leaseTtl: {
      description: `How long a slot lives when it is never released (a server that crashed). Default: ${DEFAULT_LEASE_TTL}.`,
      $ref: '#/$defs/duration',
    },
  },
} as const;

/** True for a rule written as `algorithm: concurrency`. */
export function isConcurrencyFile(rule: object): rule is ConcurrencyFile {
  return (rule as { algorithm?: unknown }).algorithm === CONCURRENCY;
}

/** A concurrency rule's limit with its default written out. */
export function concurrencyModel(name: string, rule: ConcurrencyFile): ConcurrencyModel {
  return { name, max: rule.max, leaseTtl: rule.leaseTtl ?? DEFAULT_LEASE_TTL };
}

/**
 * What the schema cannot say of concurrency rules: the decision API cannot release a slot (a
 * caller has no way to say its request ended), so a concurrency rule needs the gateway; it
 * always refuses (a slot is never lent in shadow or waited for) and fails closed.
 */
export function concurrencyProblems(
  policy: Policy,
  issue: (path: readonly (string | number)[], what: string) => PolicyIssue,
): PolicyIssue[] {
  const found: PolicyIssue[] = [];
  policy.rules.forEach((rule, i) => {
    if (rule.concurrency === undefined) return;
    if (policy.upstreams.length === 0)
      found.push(
        issue(
          ['rules', i, 'algorithm'],
          'concurrency works in gateway mode only for now (the policy needs upstream or upstreams): the decision API has no way to release a slot yet',
        ),
      );
    if (rule.mode !== 'enforce')
      found.push(
        issue(
          ['rules', i, 'mode'],
          `is ${rule.mode}, but a concurrency rule only enforces: write mode: enforce on it`,
        ),
      );
    if (rule.failure !== 'closed')
      found.push(
        issue(
          ['rules', i, 'failure'],
          'is open, but a concurrency rule fails closed (no slot without its store): write failure: closed on it',
        ),
      );
  });
  return found;
}
