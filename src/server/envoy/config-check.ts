import { isMap, isPair, isScalar, isSeq, type Node, type Pair, type Scalar, type YAMLMap } from 'yaml';

/**
 * The keys envoyproxy/ratelimit's configuration files may hold, at any depth: it checks every
 * mapping's keys against this one list (not per level), and so does sluice.
 */
const VALID_KEYS: ReadonlySet<string> = new Set([
  'domain',
  'key',
  'value',
  'descriptors',
  'rate_limit',
  'unit',
  'requests_per_unit',
  'unlimited',
  'shadow_mode',
  'quota_mode',
  'name',
  'replaces',
  'detailed_metric',
  'value_to_metric',
  'share_threshold',
  'metadata',
  // sluice's own options of a descriptor (upstream rejects a file that has them).
  'sluice',
]);

/** A reason upstream rejects a file for, with the node it is about (for its line and column). */
export class EnvoyConfigProblem extends Error {
  constructor(
    readonly reason: string,
    readonly node: Node | null | undefined,
  ) {
    super(reason);
    this.name = 'EnvoyConfigProblem';
  }
}

/**
 * The first check upstream makes of a file: every key of every mapping is a string among the
 * known keys, every list holds mappings, every other value is a string, a whole number, a boolean
 * or empty (a `metadata` value is not looked into). Throws the first problem, in file order.
 */
export function checkKeys(map: YAMLMap): void {
  for (const pair of map.items) {
    const key = pair.key as Node | null;
    if (!isScalar(key) || typeof key.value !== 'string')
      throw new EnvoyConfigProblem(
        `config error, key is not of type string: ${sourceOf(key as Scalar | null)}`,
        key,
      );
    if (!VALID_KEYS.has(key.value))
      throw new EnvoyConfigProblem(`config error, unknown key '${key.value}'`, key);
    // Arbitrary (metadata) or checked where it is read (sluice).
    if (key.value === 'metadata' || key.value === 'sluice') continue;
    checkValue(pair);
  }
}

function checkValue(pair: Pair): void {
  const value = pair.value as Node | null;
  if (isSeq(value)) {
    for (const item of value.items as (Node | null)[]) {
      if (!isMap(item))
        throw new EnvoyConfigProblem(
          `config error, yaml file contains list of type other than map: ${sourceOf(item as Scalar | null)}`,
          item,
        );
      checkKeys(item);
    }
  } else if (isMap(value)) {
    checkKeys(value);
  } else if (isScalar(value)) {
    const v = value.value;
    const leaf =
      v === null ||
      typeof v === 'string' ||
      typeof v === 'boolean' ||
      (typeof v === 'number' && Number.isInteger(v) && !/[.eE]/.test(value.source ?? ''));
    if (!leaf) throw new EnvoyConfigProblem('error checking config', value);
  } else if (value !== null && !isPair(value)) {
    throw new EnvoyConfigProblem('error checking config', value);
  }
}

/** A scalar as written (what upstream prints of it), or the text of a node that is none. */
export function sourceOf(node: Scalar | null | undefined): string {
  if (node === null || node === undefined) return '<nil>';
  if (!isScalar(node)) return 'map';
  return node.source ?? String(node.value);
}
